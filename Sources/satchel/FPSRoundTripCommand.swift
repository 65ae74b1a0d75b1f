import ArgumentParser
import Foundation
import SatchelBytes
import SatchelFairPlay

/// `satchel fps roundtrip`: a simulated device asks the KSM for a key and checks the answer.
struct FPSRoundTripCommand: SatchelAsyncCommand {
    static let configuration = CommandConfiguration(
        commandName: "roundtrip",
        abstract: "Simulated device → SPC → KSM → CKC → device, with a random content key; prints the inspection report.")

    @OptionGroup var credentials: CredentialFiles
    @OptionGroup var secrets: SecretOptions
    @Option(name: .customLong("asset-id"), help: "The asset ID.") var assetID = "satchel-demo"
    @Option(name: .customLong("lease-seconds"), help: "Lease duration to grant.") var leaseSeconds: UInt32 = 3600

    func execute() async throws {
        guard let certificatePath = credentials.certificate else { throw CLIError("--certificate is required") }
        let credential = try credentials.credential(secrets)
        let simulator = try DeviceSimulator(certificate: FileIO.read(certificatePath, what: "certificate"), dFunction: secrets.dFunction())
        let (spc, session) = try simulator.makeSPC(.init(
            assetID: Array(assetID.utf8),
            playbackState: MediaPlaybackState(creationDate: UInt32(Date().timeIntervalSince1970), state: .readyToStart, sessionID: 1),
            capabilities: Capabilities(hdcpEnforcement: true, offlineKey: true),
            extraTLLVs: [TLLV(tag: TLLVTag(0x5341_5443_4845_4c21), value: Array("undefined block".utf8))],
            returnTags: [.assetID, .transactionID, TLLVTag(0x5341_5443_4845_4c21)]))
        let contentKey = SecretBytes.random(16)
        let policy = try ContentKeyPolicy(contentKey: contentKey, contentIV: SecureRandom.bytes(16),
                                          duration: .lease(leaseSeconds), hdcp: .type0)
        let ksm = KeySecurityModule(configuration: .init(credentials: [credential], maxSPCAge: 300))
        let response = try await ksm.process(spc) { _ in policy }
        let opened = try DeviceSimulator.openCKC(response.ckc, session: session)
        print(try InspectionReport(spc: response.spc, ckcBytes: response.ckc).text)
        guard opened.contentKey == contentKey, opened.contentIV == policy.contentIV, opened.duration == policy.duration else {
            throw CLIError("round trip failed: the device recovered different values")
        }
        print("round trip OK: SPC \(spc.count) bytes → CKC \(response.ckc.count) bytes; the device recovered the content key, IV and a \(leaseSeconds) s lease")
    }
}
