import Crypto
import FluentKit
import FluentSQLiteDriver
import Foundation
import Logging
import SatchelRights
import SatchelStorage
import SatchelBytes
import SatchelSystem

/// A license as the device keeps it: the license the server signed, and what the sealed device state says of it.
/// Everything but `license`, `server` and `firstUse` is read from the signed license itself.
public struct StoredLicense: Sendable, Equatable {
    /// The license ID.
    public var licenseID: String
    /// The asset.
    public var assetID: String
    /// The signed license (content keys sealed to this device's key).
    public var license: String
    /// The license server it came from.
    public var server: String
    /// When it was issued or last renewed (server time).
    public var acquired: Date
    /// When playback first started.
    public var firstUse: Date?
    /// Kept for offline playback.
    public var persistent: Bool
    /// The rights.
    public var rights: Rights
    /// The key IDs, hex.
    public var keyIDs: [String]

    /// The usage the rights are evaluated with.
    public var usage: RightsUsage { RightsUsage(acquired: acquired, firstUse: firstUse) }
}

/// A release owed to a license server.
public struct OwedRelease: Codable, Sendable, Equatable {
    /// The license.
    public var licenseID: String
    /// Its asset.
    public var assetID: String
    /// The server to tell.
    public var server: String
    /// Since when.
    public var owedSince: Date
    /// Delivery attempts so far.
    public var attempts: Int
}

/// The agent's store (`agent.sqlite` in the data directory, mode 0600): the signed licenses in rows, and the
/// sealed `DeviceState` that vouches for them (the secure clock, each license's digest and first use, the owed
/// releases), with its rollback anchor kept apart (``StoreAnchoring``). Readers take the data directory's lock
/// shared, a change takes it exclusive, so two processes of one device never see half a change. An edit of the
/// sealed state, its deletion, or a store copied back from before its anchor is ``AgentError/storeTampered(_:)``:
/// nothing in it is believed until `rebuild(_:)` restores it from the server's records.
package final class LicenseStore: Sendable {
    /// What the store holds, as one consistent view.
    struct Snapshot: Sendable {
        /// The sealed state.
        var state: DeviceState
        /// The license rows: license ID → (signed license, server). Rows the state does not vouch for are here too.
        var rows: [String: Row]
    }

    /// One license row.
    struct Row: Sendable, Equatable {
        var license: String
        var server: String
    }

    /// A change to the rows, applied with the state in one transaction.
    enum RowChange: Sendable {
        case save(StoredLicense)
        case delete(String)
    }

    static let stateName = "device-state"
    /// This store's limit (``Agent/maximumLicenses``; smaller in tests).
    let licenseLimit: Int
    private let store: FluentStore
    private let database: any Database
    private let seal: StateSeal
    private let anchor: any StoreAnchoring
    private let fileLock: FileLock
    private let local = AsyncMutex()
    /// Moves on with every change written by this process (read without waiting: a playback session checks it
    /// before every segment and takes its rights again when it moved).
    let changes = Locked<UInt64>(0)
    /// The database file (its modification time and size move when another process writes the store).
    private let path: String

    /// Opens (and migrates) the store in `dataDirectory`, sealed under `deviceKey`, anchored by `anchor`.
    init(dataDirectory: String, deviceKey: P256.Signing.PrivateKey, anchor: (any StoreAnchoring)?, logger: Logger,
         licenseLimit: Int = Agent.maximumLicenses) async throws(AgentError) {
        self.licenseLimit = licenseLimit
        let path = (dataDirectory as NSString).appendingPathComponent("agent.sqlite")
        self.path = path
        seal = StateSeal(deviceKey: deviceKey, purpose: "agent-state")
        self.anchor = anchor ?? StateSeal(deviceKey: deviceKey, purpose: "store-anchor").platformAnchor(dataDirectory: dataDirectory)
        do {
            try PrivateFiles.folder(dataDirectory)
            try PrivateFiles.file(path)  // SQLite gives its journal and WAL files the database file's mode
            fileLock = try FileLock(path: (dataDirectory as NSString).appendingPathComponent("agent.lock"))
        } catch {
            throw .storage(error.description)
        }
        do {
            // Fluent logs every query's values at debug: licenses (JWS) have no place in a log, so the store logs from info up.
            var quiet = logger
            if quiet.logLevel < .info { quiet.logLevel = .info }
            // A sync at every commit: the store's anchor (a file of its own) must never be ahead of what the store
            // holds after a power loss, or the device would take its own store for one rolled back.
            store = try await FluentStore.open(.sqlite(.file(path)), as: .sqlite, migrations: [CreateAgentSchema()],
                                               sqlite: SQLiteSettings(durability: .everyCommit), logger: quiet)
            database = store.database
        } catch {
            throw .storage("cannot open or migrate \(path): \(error)")
        }
        // A store that has never held a state gets its anchor at 0 first: from now on a state may be ahead of its
        // anchor (a change whose anchor a crash cut short), never an anchor without a state behind it.
        try await locked(shared: false) { () async throws(AgentError) in
            if try self.anchor.read() == nil, try await self.stateText() == nil { try self.anchor.write(0) }
        }
    }

    /// Closes the store.
    package func close() async {
        await store.shutdown()
    }

    /// A value that moves whenever the store may have changed: with every change this process writes, and with the
    /// database file's (and its write-ahead log's) modification time and size, which another process's changes move.
    /// Two `stat` calls, no lock: cheap enough to read before every segment a player asks for.
    var changeStamp: UInt64 {
        var stamp = changes.current
        for file in [path, path + "-wal", path + "-journal"] {
            var info = stat()
            guard stat(file, &info) == 0 else { continue }
            #if canImport(Darwin)
            let modified = UInt64(truncatingIfNeeded: info.st_mtimespec.tv_sec) &* 1_000_000_000 &+ UInt64(truncatingIfNeeded: info.st_mtimespec.tv_nsec)
            #else
            let modified = UInt64(truncatingIfNeeded: info.st_mtim.tv_sec) &* 1_000_000_000 &+ UInt64(truncatingIfNeeded: info.st_mtim.tv_nsec)
            #endif
            for part in [modified, UInt64(truncatingIfNeeded: info.st_size), UInt64(truncatingIfNeeded: info.st_ino)] {
                stamp = (stamp ^ part) &* 0x100_0000_01b3
            }
        }
        return stamp
    }

    // MARK: Reading and changing

    /// The store as it is, checked: the sealed state opens and is not behind its anchor.
    func snapshot() async throws(AgentError) -> Snapshot {
        try await locked(shared: true) { () async throws(AgentError) -> Snapshot in
            Snapshot(state: try await self.checkedState(), rows: try await self.rows())
        }
    }

    /// Changes the store: `body` gets the checked state and the rows, changes the state and answers the row
    /// changes; the state is sealed with its counter moved on and written with the rows in one transaction, then
    /// the anchor follows. Answers what `body` answered.
    func change<T: Sendable>(_ body: @Sendable (inout DeviceState, [String: Row]) throws(AgentError) -> (T, [RowChange])) async throws(AgentError) -> T {
        try await locked(shared: false) { () async throws(AgentError) -> T in
            var state = try await self.checkedState()
            let rows = try await self.rows()
            let (value, changes) = try body(&state, rows)
            try Self.checkLimit(rows, changes, limit: self.licenseLimit)
            try await self.write(&state, changes)
            self.changes.withLock { $0 &+= 1 }
            return value
        }
    }

    /// Rebuilds a store whose state cannot be believed (``AgentError/storeTampered(_:)``), or reconciles one that
    /// can, with what `body` decides given the believed state (nil when it does not open, is missing or is behind
    /// its anchor), the stored state whenever it opens, and the rows. The new state's counter is ahead of every
    /// counter seen, the anchor's included.
    func rebuild<T: Sendable>(_ body: @Sendable (DeviceState?, DeviceState?, [String: Row]) throws(AgentError) -> (DeviceState, T, [RowChange])) async throws(AgentError) -> T {
        try await locked(shared: false) { () async throws(AgentError) -> T in
            let believed = try? await self.checkedState()
            let stored = (try await self.stateText()).flatMap { self.seal.open(DeviceState.self, $0) }
            let anchored = (try? self.anchor.read()) ?? nil
            var (state, value, changes) = try body(believed, stored, try await self.rows())
            state.counter = max(state.counter, stored?.counter ?? 0, anchored ?? 0)
            try await self.write(&state, changes)
            self.changes.withLock { $0 &+= 1 }
            return value
        }
    }

    /// How many licenses the store holds (counted, none read).
    func licenseCount() async throws(AgentError) -> Int {
        try await run("count licenses") { db in try await AgentLicenseModel.query(on: db).count() }
    }

    /// Refuses `changes` to `rows` that would leave more than `limit` licenses and more than there are now (a store
    /// already over it may still lose licenses, or change those it has).
    static func checkLimit(_ rows: [String: Row], _ changes: [RowChange], limit: Int) throws(AgentError) {
        var ids = Set(rows.keys)
        for change in changes {
            switch change {
            case let .save(license): ids.insert(license.licenseID)
            case let .delete(id): ids.remove(id)
            }
        }
        if ids.count > limit, ids.count > rows.count { throw .licenseLimit(limit) }
    }

    /// The license rows as they are, whatever the sealed state says (for reconciling them with the server).
    func rawRows() async throws(AgentError) -> [String: Row] {
        try await locked(shared: true) { () async throws(AgentError) -> [String: Row] in try await self.rows() }
    }

    /// Releases owed by a store of an earlier version (its own table): still worth delivering.
    func legacyReleases() async throws(AgentError) -> [OwedRelease] {
        let limit = licenseLimit  // one per license it held at most
        return try await run("read releases") { db in
            try await AgentReleaseModel.query(on: db).sort(\.$owedSince).limit(limit).all().map {
                OwedRelease(licenseID: $0.id ?? "", assetID: $0.assetID, server: $0.server, owedSince: $0.owedSince, attempts: $0.attempts)
            }
        }
    }

    // MARK: Internals

    /// Runs `body` holding the data directory's lock: one holder in this process at a time, then the file lock.
    private func locked<T: Sendable>(shared: Bool, _ body: () async throws(AgentError) -> T) async throws(AgentError) -> T {
        try await local.withLock { () async throws(AgentError) -> T in
            await fileLock.lock(shared: shared)
            defer { fileLock.unlock() }
            return try await body()
        }
    }

    /// The sealed state, checked against its anchor; a fresh state when the store has never held one.
    private func checkedState() async throws(AgentError) -> DeviceState {
        let anchored = try anchor.read()
        guard let text = try await stateText() else {
            guard (anchored ?? 0) == 0 else { throw .storeTampered("its sealed state is missing") }
            var fresh = DeviceState()
            fresh.owed = try await legacyReleases()
            return fresh
        }
        guard let state = seal.open(DeviceState.self, text) else { throw .storeTampered("its sealed state does not open") }
        guard let anchored else { throw .storeTampered("its anchor is missing") }
        guard state.counter >= anchored else { throw .storeTampered("it is older than its anchor: it was copied back from an earlier time") }
        return state
    }

    private func stateText() async throws(AgentError) -> String? {
        try await run("read the device state") { db in try await AgentStateModel.find(Self.stateName, on: db)?.value }
    }

    private func rows() async throws(AgentError) -> [String: Row] {
        // Satchel keeps at most `licenseLimit` rows; a store grown past twice that by hand is not read past it.
        let limit = 2 * licenseLimit
        let models = try await run("read licenses") { db in try await AgentLicenseModel.query(on: db).sort(\.$id).limit(limit).all() }
        var rows: [String: Row] = [:]
        for model in models { if let id = model.id { rows[id] = Row(license: model.license, server: model.server) } }
        return rows
    }

    /// Seals `state` with its counter moved on, writes it and the row changes in one transaction, then the anchor.
    private func write(_ state: inout DeviceState, _ changes: [RowChange]) async throws(AgentError) {
        state.counter += 1
        let sealed = try seal.seal(state)
        var rows: [(StoredLicense, String)] = []
        for case let .save(license) in changes { rows.append((license, try Self.json(license.rights))) }
        let saved = rows
        let deleted = changes.compactMap { change -> String? in if case let .delete(id) = change { id } else { nil } }
        try await run("save the device state") { db in
            try await db.transaction { db in
                for id in deleted { try await AgentLicenseModel.query(on: db).filter(\.$id == id).delete() }
                for (license, rights) in saved {
                    let model = try await AgentLicenseModel.find(license.licenseID, on: db) ?? AgentLicenseModel()
                    model.id = license.licenseID
                    // For people reading the file: never read back (the signed license is the one source).
                    model.assetID = license.assetID
                    model.license = license.license
                    model.server = license.server
                    model.acquiredAt = license.acquired
                    model.firstUse = license.firstUse
                    model.persistent = license.persistent
                    model.rights = rights
                    model.keyIDs = license.keyIDs.joined(separator: ",")
                    try await model.save(on: db)
                }
                let model = try await AgentStateModel.find(Self.stateName, on: db) ?? AgentStateModel()
                model.id = Self.stateName
                model.value = sealed
                try await model.save(on: db)
                // Releases of the earlier version's table now live in the sealed state, and so does the clock.
                try await AgentReleaseModel.query(on: db).delete()
                try await AgentStateModel.query(on: db).filter(\.$id == "secure-clock").delete()
            }
        }
        try anchor.write(state.counter)
    }

    private func run<T: Sendable>(_ what: String, _ body: @Sendable (any Database) async throws -> T) async throws(AgentError) -> T {
        do {
            return try await body(database)
        } catch {
            throw .storage("cannot \(what): \(String(describing: error).prefix(200))")
        }
    }

    static func json(_ value: some Encodable) throws(AgentError) -> String {
        guard let text = RightsJSON.text(value) else { throw .storage("a value cannot be encoded") }
        return text
    }
}
