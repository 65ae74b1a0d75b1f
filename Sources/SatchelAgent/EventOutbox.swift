import FluentKit
import FluentSQLiteDriver
import Foundation
import Logging
import SatchelBackplane
import SatchelBytes
import SatchelStorage
import SatchelSystem

/// The device's events waiting for the backplane (`events.sqlite` in the data directory, mode 0600): written as they
/// happen, read and sent at the next sync, removed only once the backplane has kept them. Every process of the
/// device writes here under `events.lock`, so two never collide.
final class EventOutbox: Sendable {
    /// Events kept at most while the backplane cannot be reached: past it, only mandatory events are kept.
    static let capacity = 100_000
    private let store: FluentStore
    private let database: any Database
    private let fileLock: FileLock
    private let local = AsyncMutex()

    /// Opens (and migrates) the outbox of `dataDirectory`.
    init(dataDirectory: String, logger: Logger) async throws(AgentError) {
        let path = (dataDirectory as NSString).appendingPathComponent("events.sqlite")
        do {
            try PrivateFiles.folder(dataDirectory)
            try PrivateFiles.file(path)
            fileLock = try FileLock(path: (dataDirectory as NSString).appendingPathComponent("events.lock"))
        } catch {
            throw .storage(error.description)
        }
        var quiet = logger
        if quiet.logLevel < .info { quiet.logLevel = .info }
        do {
            // A sync at every commit: an event the device reported (a license used, a play) is never taken back.
            store = try await FluentStore.open(.sqlite(.file(path)), as: .sqlite, migrations: [CreateEventOutbox()],
                                               sqlite: SQLiteSettings(durability: .everyCommit), logger: quiet)
            database = store.database
        } catch {
            throw .storage("cannot open or migrate \(path): \(error)")
        }
    }

    func close() async {
        await store.shutdown()
    }

    /// Keeps `event` (a non-mandatory one is dropped when the outbox is full); answers whether it was kept.
    @discardableResult
    func add(_ event: DeviceEvent) async throws(AgentError) -> Bool {
        guard let data = try? JSONCoding.encoder().encode(event) else { throw .storage("an event cannot be encoded") }
        let body = String(decoding: data, as: UTF8.self)
        return try await locked { () async throws(AgentError) -> Bool in
            try await self.run("keep the event") { db in
                if !event.kind.isMandatory, try await OutboxEventModel.query(on: db).count() >= Self.capacity { return false }
                let row = OutboxEventModel()
                row.id = event.eventID
                row.body = body
                row.created = event.time
                try await row.create(on: db)
                return true
            }
        }
    }

    /// The oldest events waiting, at most `limit`. A row that does not read as an event (edited by hand) is removed,
    /// so it never holds back the events after it.
    func pending(limit: Int) async throws(AgentError) -> [DeviceEvent] {
        let rows = try await locked { () async throws(AgentError) -> [(String, String)] in
            try await self.run("read the events") { db in
                try await OutboxEventModel.query(on: db).sort(\.$created).sort(\.$id).limit(limit).all().map { ($0.id ?? "", $0.body) }
            }
        }
        var events: [DeviceEvent] = [], unreadable: [String] = []
        for (id, body) in rows {
            if let event = try? JSONCoding.decoder().decode(DeviceEvent.self, from: Data(body.utf8)) { events.append(event) } else { unreadable.append(id) }
        }
        try await remove(unreadable)
        return events
    }

    /// Removes the events the backplane has kept.
    func remove(_ ids: [String]) async throws(AgentError) {
        guard !ids.isEmpty else { return }
        try await locked { () async throws(AgentError) in
            try await self.run("remove the events sent") { db in try await OutboxEventModel.query(on: db).filter(\.$id ~~ ids).delete() }
        }
    }

    /// How many events wait.
    func count() async throws(AgentError) -> Int {
        try await locked { () async throws(AgentError) -> Int in try await self.run("count the events") { db in try await OutboxEventModel.query(on: db).count() } }
    }

    private func locked<T: Sendable>(_ body: () async throws(AgentError) -> T) async throws(AgentError) -> T {
        try await local.withLock { () async throws(AgentError) -> T in
            await fileLock.lock(shared: false)
            defer { fileLock.unlock() }
            return try await body()
        }
    }

    private func run<T: Sendable>(_ what: String, _ body: @Sendable (any Database) async throws -> T) async throws(AgentError) -> T {
        do { return try await body(database) } catch { throw .storage("cannot \(what): \(String(describing: error).prefix(200))") }
    }
}

/// An event waiting to be sent.
final class OutboxEventModel: Model, @unchecked Sendable {
    static let schema = "outbox"

    @ID(custom: "event_id", generatedBy: .user) var id: String?
    /// The event in its JSON form.
    @Field(key: "body") var body: String
    @Field(key: "created_at") var created: Date

    init() {}
}

struct CreateEventOutbox: AsyncMigration {
    func prepare(on database: any Database) async throws {
        try await database.schema(OutboxEventModel.schema)
            .field("event_id", .string, .identifier(auto: false)).field("body", .string, .required).field("created_at", .datetime, .required)
            .create()
    }

    func revert(on database: any Database) async throws {
        try await database.schema(OutboxEventModel.schema).delete()
    }
}
