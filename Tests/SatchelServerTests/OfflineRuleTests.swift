import Foundation
import SatchelBytes
import SatchelFairPlay
import SatchelLicensing
import SatchelProtection
import Testing

/// One offline rule for every license type (LicenseService.allowsOffline): offline only for a token with
/// `persistent: true` and an asset whose policy allows offline use.
@Suite("License service: one offline rule for FairPlay, Clear Key and AES-128")
struct OfflineRuleTests {
    @Test("persistable FairPlay keys, dual-expiry Offline Key TLLVs and persistent Clear Key licenses need both the token and the asset")
    func oneRule() async throws {
        let world = try await LicenseServerTests.world("sqlite", packaged: false)
        defer { Task { await world.database.shutdown() } }
        let persisting = AssetPolicy(persist: true, persistSeconds: 3600, offline: true)
        let dual = AssetPolicy(offlineContentID: String(repeating: "ab", count: 16), storageSeconds: 600, playbackSeconds: 60, offline: true)
        var online = persisting
        online.offline = false
        var keys: [String: ContentKey] = [:]
        for (name, policy) in [("persisting", persisting), ("dual", dual), ("online", online)] {
            let key = ContentKey.random()
            keys[name] = key
            try await world.store.importKeys([key], assetID: name, fairPlayAssetID: name, policy: policy)
        }
        let simulator = try LicenseServerTests.simulator()
        for persistent in [true, false, nil] as [Bool?] {
            for name in ["persisting", "dual", "online"] {
                let token = try await world.token(asset: name, persistent: persistent)
                let offline = persistent == true && name != "online"
                let (spc, session) = try simulator.makeSPC(.init(assetID: Array(name.utf8),
                                                                 playbackState: .init(creationDate: 1, state: .readyToStart, sessionID: 1),
                                                                 capabilities: Capabilities(hdcpEnforcement: true, offlineKey: true)))
                let ckc = try DeviceSimulator.openCKC(try await world.service.fairPlay(spc: spc, token: token).ckc, session: session)
                let label = "\(name), persistent \(String(describing: persistent))"
                switch name {
                case "dual": #expect((ckc.offlineKey != nil) == offline, "\(label)")
                default: #expect((ckc.duration?.keyType == .persistableLimited) == offline, "\(label)")
                }
                let key = try #require(keys[name])
                let request = ClearKey.Request(keyIDs: [key.keyID], type: "persistent-license")
                if offline {
                    #expect(try ClearKey.parseResponse(try await world.service.clearKey(request, token: token)).first?.key.bytes == key.key.bytes)
                } else {
                    await #expect(throws: LicensingError.self, "\(label)") { try await world.service.clearKey(request, token: token) }
                }
                // An AES-128 key is the same whatever the token says: it has no offline form.
                #expect(try await world.service.aes128Key(key.keyID, token: token) == key.key.bytes)
            }
        }
    }
}
