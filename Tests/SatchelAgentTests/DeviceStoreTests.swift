import Crypto
import Foundation
import Logging
@testable import SatchelAgent
import SatchelRights
import Testing

/// The agent's store without the binary: the sealed state and its anchor over a real SQLite file, and the pure
/// reconciliation with the server's statement.
@Suite("Agent store: sealed state, anchor, reconciliation")
struct DeviceStoreTests {
    static func directory(_ name: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("satchel-agent-\(name)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func store(_ directory: String, key: P256.Signing.PrivateKey) async throws -> LicenseStore {
        try await LicenseStore(dataDirectory: directory, deviceKey: key,
                               anchor: FileStoreAnchor(dataDirectory: directory, seal: StateSeal(deviceKey: key, purpose: "store-anchor")),
                               logger: Logger(label: "test"))
    }

    @Test("a device keeps at most its limit of licenses (10,000): a change that would hold more is refused with license-limit and writes nothing; one that replaces or saves again goes through")
    func licenseLimit() async throws {
        #expect(Agent.maximumLicenses == 10_000)
        let directory = try Self.directory("limit")
        let key = P256.Signing.PrivateKey()
        let store = try await LicenseStore(dataDirectory: directory, deviceKey: key,
                                           anchor: FileStoreAnchor(dataDirectory: directory, seal: StateSeal(deviceKey: key, purpose: "store-anchor")),
                                           logger: Logger(label: "test"), licenseLimit: 2)
        func license(_ id: String) -> StoredLicense {
            StoredLicense(licenseID: id, assetID: "asset-\(id)", license: "signed-\(id)", server: "http://127.0.0.1:1", acquired: Date(), firstUse: nil,
                          persistent: false, rights: Rights(), keyIDs: [])
        }
        func change(_ changes: [LicenseStore.RowChange]) async throws {
            try await store.change { (_, _) throws(AgentError) -> (Void, [LicenseStore.RowChange]) in ((), changes) }
        }
        try await change([.save(license("1")), .save(license("2"))])
        await #expect(throws: AgentError.licenseLimit(2)) { try await change([.save(license("3"))]) }
        let (count, counter) = (try await store.licenseCount(), try await store.snapshot().state.counter)
        #expect(count == 2 && counter == 1, "the refused change wrote nothing")
        #expect(AgentError.licenseLimit(2).code == "license-limit" && "\(AgentError.licenseLimit(2))".contains("release"))
        try await change([.delete("1"), .save(license("3"))])
        try await change([.save(license("2"))])
        #expect(Set(try await store.rawRows().keys) == ["2", "3"])
        // Grown past twice its limit outside a change (a rebuild checks no limit): reads stop at twice the limit.
        let grown: [LicenseStore.RowChange] = ["4", "5", "6"].map { .save(license($0)) }
        _ = try await store.rebuild { (believed, _, _) throws(AgentError) -> (DeviceState, Void, [LicenseStore.RowChange]) in
            (believed ?? DeviceState(), (), grown)
        }
        let (total, read) = (try await store.licenseCount(), try await store.rawRows().keys.sorted())
        #expect(total == 5 && read == ["2", "3", "4", "5"])
        await store.close()
    }

    @Test("a sealed value opens only unchanged, with its key and its purpose")
    func seal() throws {
        let key = P256.Signing.PrivateKey(), other = P256.Signing.PrivateKey()
        var state = DeviceState()
        state.counter = 9
        state.licenses["l"] = .init(digest: DeviceState.digest(of: "x"), firstUse: Date(timeIntervalSince1970: 5))
        let text = try StateSeal(deviceKey: key, purpose: "agent-state").seal(state)
        #expect(StateSeal(deviceKey: key, purpose: "agent-state").open(DeviceState.self, text) == state)
        #expect(StateSeal(deviceKey: other, purpose: "agent-state").open(DeviceState.self, text) == nil)
        #expect(StateSeal(deviceKey: key, purpose: "store-anchor").open(DeviceState.self, text) == nil)
        var bytes = Array(Data(base64Encoded: text) ?? Data())
        for index in [0, 12, bytes.count / 2, bytes.count - 1] {
            bytes[index] ^= 1
            #expect(StateSeal(deviceKey: key, purpose: "agent-state").open(DeviceState.self, Data(bytes).base64EncodedString()) == nil, "byte \(index)")
            bytes[index] ^= 1
        }
        #expect(SealedDeviceState.opens(SealedDeviceState.sample(deviceKey: key), deviceKey: key))
        #expect(!SealedDeviceState.opens(SealedDeviceState.sample(deviceKey: key), deviceKey: other))
    }

    @Test("each change moves the counter on and the anchor with it; the database copied back from before a change is refused; the state deleted is refused; a rebuild is ahead of all")
    func anchorAndRollback() async throws {
        let directory = try Self.directory("anchor")
        let key = P256.Signing.PrivateKey()
        var store = try await Self.store(directory, key: key)
        let anchor = FileStoreAnchor(dataDirectory: directory, seal: StateSeal(deviceKey: key, purpose: "store-anchor"))
        #expect(try anchor.read() == 0, "a new store anchors at 0 before any state")
        #expect(try await store.snapshot().state == DeviceState())
        for expected in 1...3 {
            try await store.change { (state, _) throws(AgentError) -> (Void, [LicenseStore.RowChange]) in
                state.licenses["l\(expected)"] = .init(digest: "d", firstUse: nil)
                return ((), [])
            }
            #expect(try await store.snapshot().state.counter == UInt64(expected) && anchor.read() == UInt64(expected))
        }
        await store.close()
        let copy = directory + "/copy.sqlite"
        try FileManager.default.copyItem(atPath: directory + "/agent.sqlite", toPath: copy)
        store = try await Self.store(directory, key: key)
        try await store.change { (state, _) throws(AgentError) -> (Void, [LicenseStore.RowChange]) in
            state.licenses["l1"] = nil
            return ((), [])
        }
        await store.close()
        for file in try FileManager.default.contentsOfDirectory(atPath: directory) where file.hasPrefix("agent.sqlite") {
            try FileManager.default.removeItem(atPath: directory + "/" + file)
        }
        try FileManager.default.copyItem(atPath: copy, toPath: directory + "/agent.sqlite")
        store = try await Self.store(directory, key: key)
        await #expect(throws: AgentError.storeTampered("it is older than its anchor: it was copied back from an earlier time")) { try await store.snapshot() }
        await #expect(throws: AgentError.self) {
            try await store.change { (_, _) throws(AgentError) -> (Void, [LicenseStore.RowChange]) in ((), []) }
        }
        let counter = try await store.rebuild { (believed, previous, _) throws(AgentError) -> (DeviceState, UInt64, [LicenseStore.RowChange]) in
            #expect(believed == nil && previous?.counter == 3)
            return (DeviceState(), previous?.counter ?? 0, [])
        }
        #expect(counter == 3)
        #expect(try await store.snapshot().state.counter == 5, "ahead of the anchor's 4")
        await store.close()
    }

    @Test("the server's statement: a released license and an unknown one are removed (with their owed release), a live one not vouched for is adopted with its window as started at issue, another server's rows and rows not examined stay, a row that is not this device's license goes")
    func reconciliation() {
        func claims(_ id: String, window: UInt32? = nil) -> LicenseClaims {
            LicenseClaims(licenseID: id, deviceID: "device", assetID: "asset-\(id)", keys: [], rights: Rights(playbackSeconds: window),
                          serverTime: Date(timeIntervalSince1970: 1000), renewalURL: nil, nonce: "n")
        }
        let rows: [String: LicenseStore.Row] = [
            "kept": .init(license: "jws-kept", server: "a"), "released": .init(license: "jws-released", server: "a"),
            "unknown": .init(license: "jws-unknown", server: "a"), "adopted": .init(license: "jws-adopted", server: "a"),
            "other": .init(license: "jws-other", server: "b"), "forged": .init(license: "jws-forged", server: "a"),
            "late": .init(license: "jws-late", server: "a"),
        ]
        var verdicts = StoreReconciliation.Verdicts()
        for id in ["kept", "released", "unknown", "other"] { verdicts.licenses[DeviceState.digest(of: "jws-\(id)")] = claims(id) }
        verdicts.licenses[DeviceState.digest(of: "jws-adopted")] = claims("adopted", window: 60)
        verdicts.invalid.insert(DeviceState.digest(of: "jws-forged"))
        var state = DeviceState()
        state.licenses["kept"] = .init(digest: DeviceState.digest(of: "jws-kept"), firstUse: Date(timeIntervalSince1970: 5))
        state.licenses["released"] = .init(digest: DeviceState.digest(of: "jws-released"), firstUse: nil)
        state.licenses["gone"] = .init(digest: "no row", firstUse: nil)
        state.owed = [OwedRelease(licenseID: "released", assetID: "a", server: "a", owedSince: Date(), attempts: 1)]
        let outcome = StoreReconciliation.reconcile(state, previous: state, rows: rows, server: "a",
                                                    statuses: [.init(licenseID: "kept", state: "active"), .init(licenseID: "released", state: "released"),
                                                               .init(licenseID: "adopted", state: "renewed")],
                                                    verdicts: verdicts)
        #expect(Set(outcome.removed) == ["released", "unknown", "forged"])
        #expect(outcome.adopted == ["adopted"])
        #expect(Set(outcome.state.licenses.keys) == ["kept", "adopted"])
        #expect(outcome.state.licenses["kept"]?.firstUse == Date(timeIntervalSince1970: 5))
        #expect(outcome.state.licenses["adopted"]?.firstUse == Date(timeIntervalSince1970: 1000), "a window's first use taken as its issue")
        #expect(outcome.state.owed.isEmpty, "a release the server has is no longer owed")
        #expect(Set(outcome.changes.compactMap { if case let .delete(id) = $0 { id } else { nil } }) == ["released", "unknown", "forged"])
    }
}
