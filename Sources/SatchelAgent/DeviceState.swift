import Crypto
import Foundation
import SatchelBackplane
import SatchelBytes
import SatchelRights

/// What the agent keeps that the device's owner must not change: the secure clock (its high-water mark and
/// trust), each installed license (a digest of the signed license, when it was first used), and the releases owed
/// to the server — one value, sealed with a key derived from the device key (AES-GCM: an edit does not open), with
/// a counter that moves on at every change and that the store's anchor, kept apart, must not be ahead of (a store
/// copied back does not open either). The signed licenses themselves stay in the store's rows: a license counts
/// only when this value lists its digest, and its rights come from the license the server signed, never from a
/// column.
struct DeviceState: Codable, Sendable, Equatable {
    /// Moves on at every change; never behind the anchor.
    var counter: UInt64 = 0
    /// The secure clock.
    var clock = SecureClock()
    /// The installed licenses, by license ID.
    var licenses: [String: InstalledLicense] = [:]
    /// Releases not yet delivered, oldest first.
    var owed: [OwedRelease] = []
    /// What the backplane last told this device (nil: never synced, or lost with a state rebuilt).
    var backplane: BackplaneStatus?
    /// License challenges handed to the app and not yet answered (delegated acquisition), oldest first; nil: none
    /// ever (a state sealed before they existed).
    var challenges: [PendingChallenge]?

    /// One installed license as the sealed state vouches for it.
    struct InstalledLicense: Codable, Sendable, Equatable {
        /// SHA-256 of the signed license, hex: the row's license must be exactly this one.
        var digest: String
        /// When playback first started (a playback window runs from then).
        var firstUse: Date?
    }

    /// The digest a license is vouched for by.
    static func digest(of license: String) -> String {
        SHA256.hash(data: Data(license.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}

/// Seals and opens the device state (and the anchor) with keys derived from the device key, one per purpose.
struct StateSeal: Sendable {
    private let key: SymmetricKey
    private let purpose: String

    /// A seal for `purpose` (`agent-state`, `store-anchor`) under the device key.
    init(deviceKey: P256.Signing.PrivateKey, purpose: String) {
        key = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: deviceKey.rawRepresentation), salt: Data("satchel-device".utf8),
                                     info: Data("\(purpose)-v1".utf8), outputByteCount: 32)
        self.purpose = purpose
    }

    /// `value` sealed: base64 of nonce, ciphertext and tag.
    func seal(_ value: some Encodable) throws(AgentError) -> String {
        do {
            let plain = try JSONCoding.encoder(dates: .referenceSeconds).encode(value)
            guard let combined = try AES.GCM.seal(plain, using: key, authenticating: Data(purpose.utf8)).combined else {
                throw AgentError.storage("the device state cannot be sealed")
            }
            return combined.base64EncodedString()
        } catch let error as AgentError {
            throw error
        } catch {
            throw .storage("the device state cannot be sealed")
        }
    }

    /// The value `text` seals, or nil when it does not open (edited, made with another key, not sealed at all).
    func open<T: Decodable>(_ type: T.Type, _ text: String) -> T? {
        guard let combined = Data(base64Encoded: text), let box = try? AES.GCM.SealedBox(combined: combined),
              let plain = try? AES.GCM.open(box, using: key, authenticating: Data(purpose.utf8)) else { return nil }
        return try? JSONCoding.decoder(dates: .referenceSeconds).decode(type, from: plain)
    }
}

/// The sealed record of the agent's store, as a whole, for checks from outside the agent (the fuzzer): a record
/// opens only unchanged and only with the key it was sealed for; anything else is refused, never a trap.
package enum SealedDeviceState {
    /// A record as the store writes it, for `deviceKey`: a state with `licenses` installed licenses and as many
    /// owed releases, a clock that has seen `time`.
    package static func sample(deviceKey: P256.Signing.PrivateKey, licenses: Int = 3, time: Date = Date(timeIntervalSince1970: 1_800_000_000)) -> String {
        var state = DeviceState()
        state.counter = UInt64(licenses)
        _ = state.clock.anchor(serverTime: time, ClockReading(wall: time, boot: 100, bootID: "boot"))
        for index in 0..<max(licenses, 0) {
            state.licenses["license-\(index)"] = .init(digest: DeviceState.digest(of: "license \(index)"), firstUse: index.isMultiple(of: 2) ? time : nil)
            state.owed.append(OwedRelease(licenseID: "owed-\(index)", assetID: "asset-\(index)", server: "http://127.0.0.1:8080", owedSince: time, attempts: index))
        }
        return (try? StateSeal(deviceKey: deviceKey, purpose: "agent-state").seal(state)) ?? ""
    }

    /// True when `text` is a record sealed for `deviceKey` that opens whole.
    package static func opens(_ text: String, deviceKey: P256.Signing.PrivateKey) -> Bool {
        StateSeal(deviceKey: deviceKey, purpose: "agent-state").open(DeviceState.self, text) != nil
    }
}
