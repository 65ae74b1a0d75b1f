import ArgumentParser
import Foundation
import SatchelBytes
import SatchelFairPlay

/// `satchel fps ckc`: answer one SPC file with a CKC file.
struct FPSCKCCommand: SatchelAsyncCommand {
    static let configuration = CommandConfiguration(
        commandName: "ckc", abstract: "Build the CKC that answers an SPC.")

    @Option(help: "The SPC file.") var spc: String
    @OptionGroup var credentials: CredentialFiles
    @OptionGroup var secrets: SecretOptions
    @Option(name: .customLong("content-key"), help: "The 16-byte content key in hex.") var contentKey: String
    @Option(name: .customLong("content-iv"), help: "The 16-byte content IV in hex.") var contentIV: String
    @Option(name: .customLong("lease-seconds"), help: "Lease duration.") var leaseSeconds: UInt32?
    @Option(name: .customLong("rental-seconds"), help: "Rental duration.") var rentalSeconds: UInt32?
    @Flag(help: "Allow the device to persist the key (offline playback).") var persist = false
    @Option(name: .customLong("persist-seconds"), help: "Limit a persisted key's validity (key type 0x18f06048).") var persistSeconds: UInt32?
    @Option(help: "HDCP requirement: none, type0 or type1.") var hdcp: HDCPRequirement?
    @Option(name: .customLong("offline-content-id"), help: "Dual expiry: the 16-byte content ID in hex.") var offlineContentID: String?
    @Option(name: .customLong("storage-seconds"), help: "Dual expiry: validity before first playback (0 = unlimited).") var storageSeconds: UInt32?
    @Option(name: .customLong("playback-seconds"), help: "Dual expiry: validity after first playback (0 = unlimited).") var playbackSeconds: UInt32?
    @Flag(name: .customLong("deny-airplay"), help: "Refuse SPCs for AirPlay streaming.") var denyAirPlay = false
    @Flag(name: .customLong("deny-av-adapter"), help: "Refuse SPCs for an AV adapter.") var denyAVAdapter = false
    @Flag(name: .customLong("withhold-key-while-playing"), help: "Answer playback state 2 without the real key.") var withhold = false
    @Option(name: .customLong("max-spc-age"), help: "Refuse SPCs created further than this from now (seconds).") var maxSPCAge: UInt32?
    @Option(name: .customLong("versions"), help: "Protocol versions this server supports, comma separated.") var versions: String = "1"
    @Flag(name: .customLong("reject-downgrade"), help: "Refuse SPCs that use an older version than the best common one.") var rejectDowngrade = false
    @Flag(name: .customLong("require-offline-capability"),
          help: "Send an Offline Key TLLV only to clients whose SPC announces the capability (default: as Apple's reference KSM).")
    var requireOfflineCapability = false
    @Option(help: "Where to write the CKC.") var out: String

    func validate() throws {
        if persistSeconds != nil && !persist { throw ValidationError("--persist-seconds needs --persist") }
        let offline = [offlineContentID == nil, storageSeconds == nil, playbackSeconds == nil]
        if offline.contains(false) && offline.contains(true) {
            throw ValidationError("--offline-content-id, --storage-seconds and --playback-seconds go together")
        }
        if offlineContentID != nil && (leaseSeconds != nil || rentalSeconds != nil || persist) {
            throw ValidationError("an offline key (dual expiry) cannot be combined with lease, rental or persist")
        }
    }

    func execute() async throws {
        let ksm = KeySecurityModule(configuration: .init(
            credentials: [try credentials.credential(secrets)], supportedVersions: try parseVersions(versions),
            rejectDowngrade: rejectDowngrade, maxSPCAge: maxSPCAge, requireOfflineKeyCapability: requireOfflineCapability))
        let policy = try ContentKeyPolicy(
            contentKey: SecretBytes(hexOption(contentKey, count: 16, name: "--content-key")),
            contentIV: hexOption(contentIV, count: 16, name: "--content-iv"),
            duration: .from(leaseSeconds: leaseSeconds, rentalSeconds: rentalSeconds, persist: persist, persistSeconds: persistSeconds),
            hdcp: hdcp,
            offlineKey: try offlineContentID.map {
                try OfflineKeyPolicy(contentID: hexOption($0, count: 16, name: "--offline-content-id"),
                                     storageSeconds: storageSeconds ?? 0, playbackSeconds: playbackSeconds ?? 0)
            },
            streaming: StreamingPermissions(airPlay: !denyAirPlay, avAdapter: !denyAVAdapter),
            withholdKeyWhilePlaying: withhold)
        let response = try await ksm.process(try FileIO.read(spc, what: "SPC")) { _ in policy }
        try FileIO.write(response.ckc, to: out)
        var notes: [String] = []
        if response.versions.isDowngrade { notes.append("warning: the device used an older protocol version than the best common one") }
        if response.versions.deviceSupportsNewer { notes.append("note: the device supports a newer protocol version than this server") }
        if response.summary.durationOmitted { notes.append("note: the SPC has no media playback state, so no content key duration TLLV was sent") }
        if let sync = response.sync { notes.append("sync SPC: content ID \(Hex.encode(sync.contentID)), \(sync.durationToExpiry) s to expiry") }
        let asset = response.spc.assetIDString.map { "\"\($0)\"" } ?? Hex.encode(response.spc.assetID)
        print("wrote \(out): \(response.ckc.count) bytes for asset \(asset)")
        notes.forEach { print($0) }
    }
}

/// Parses "1,2" into protocol versions.
func parseVersions(_ text: String) throws -> [UInt32] {
    let versions = text.split(separator: ",").compactMap { UInt32($0.trimmingCharacters(in: .whitespaces)) }
    guard !versions.isEmpty, versions.count == text.split(separator: ",").count else {
        throw CLIError("--versions: expected a comma-separated list of numbers")
    }
    return versions
}
