import Crypto
import Foundation
import SatchelBackplane
import SatchelBytes
import SatchelLicensing

/// The backplane's stream slots as the license service's ``LeaseSlots`` (the FairPlay Streaming Programming Guide,
/// "Secure Lease": "the server
/// associates a slot to a device"): a FairPlay lease takes, or renews, one slot per account, device (the SPC's HU)
/// and asset, held for the lease's length; a device that stops renewing frees it when the lease ends.
struct BackplaneLeaseSlots: LeaseSlots {
    let slots: any StreamSlotStoring

    func lease(subject: String, device: String, asset: String, seconds: UInt32, at now: Date) async throws(LicensingError) {
        let answer: StreamSlotAnswer
        do {
            answer = try await slots.lease(slotID: Self.slotID(subject: subject, device: device, asset: asset), user: subject, holder: "fairplay:" + device,
                                           asset: asset, seconds: seconds, at: now)
        } catch {
            throw .storage("the lease's stream slot: \(error.description)")
        }
        guard answer.granted else { throw .streamLimit }
    }

    /// The slot a lease holds: the same for every renewal of one account's playback of one asset on one device.
    static func slotID(subject: String, device: String, asset: String) -> String {
        "fairplay-" + Hex.encode(Array(SHA256.hash(data: Array((subject + "\n" + device + "\n" + asset).utf8)).prefix(16)))
    }
}
