import Foundation
import Hummingbird
import NIOCore
import SatchelBackplane
import SatchelBytes
import ServiceLifecycle

/// One device's server-sent events: the settings first, then every command after the cursor as it is issued (woken
/// by the node's ``BackplaneWakeHub``; the store is read on each wake, so nothing is lost between wakes), `feed`
/// (data: the feed's ID) when an item is added to a feed the device follows, and a comment line every heartbeat.
struct BackplaneEventStream: Sendable {
    let backplane: BackplaneService
    let device: String
    let after: Int64

    private enum Event: Sendable { case wake(BackplaneWakeHub.Wake), heartbeat }

    func run(_ writer: inout any ResponseBodyWriter) async throws {
        let (wakes, cancel) = backplane.hub.subscribe(device: device, exclusive: true)
        defer { cancel() }
        let (events, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingNewest(8))
        let heartbeat = backplane.heartbeat
        // The server stopping ends the stream (its graceful shutdown would otherwise wait for the device to go away).
        try await withGracefulShutdownHandler {
            try await stream(wakes, continuation, events, heartbeat, &writer)
        } onGracefulShutdown: {
            continuation.finish()
        }
        try await writer.finish(nil)
    }

    private func stream(_ wakes: AsyncStream<BackplaneWakeHub.Wake>, _ continuation: AsyncStream<Event>.Continuation, _ events: AsyncStream<Event>,
                        _ heartbeat: Duration, _ writer: inout any ResponseBodyWriter) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await wake in wakes { continuation.yield(.wake(wake)) }
                continuation.finish()
            }
            group.addTask {
                while !Task.isCancelled {
                    try await Task.sleep(for: heartbeat)
                    continuation.yield(.heartbeat)
                }
            }
            var cursor = after
            try await follow()
            try await writer.write(try Self.event("settings", id: nil, try await backplane.store.settings()))
            cursor = try await sendCommands(after: cursor, &writer)
            for await event in events {
                switch event {
                case .heartbeat:
                    try await writer.write(ByteBuffer(string: ": heartbeat\n\n"))
                case .wake(.settings):
                    try await writer.write(try Self.event("settings", id: nil, try await backplane.store.settings()))
                    cursor = try await sendCommands(after: cursor, &writer)
                case .wake(.commands):
                    cursor = try await sendCommands(after: cursor, &writer)
                case .wake(.subscriptions):
                    try await follow()
                case let .wake(.feed(feed)):
                    try await writer.write(try Self.event("feed", id: nil, FeedWake(feedID: feed)))
                }
            }
            group.cancelAll()
        }
    }

    /// Reads the device's subscriptions and has the hub wake this stream for their feeds.
    private func follow() async throws {
        backplane.hub.follow(device: device, feeds: Set(try await backplane.feeds.subscriptions(device: device).map(\.feedID)))
    }

    /// A `feed` event's data.
    struct FeedWake: Encodable {
        var feedID: String
    }

    /// Sends the commands after `cursor`; answers the new cursor.
    private func sendCommands(after cursor: Int64, _ writer: inout any ResponseBodyWriter) async throws -> Int64 {
        var cursor = cursor
        for command in try await backplane.store.pending(device: device, after: cursor, limit: 500) {
            try await writer.write(try Self.event("command", id: command.sequence, command))
            cursor = command.sequence
        }
        return cursor
    }

    /// An event: `id:` (when given), `event:`, one `data:` line of JSON, a blank line.
    static func event(_ name: String, id: Int64?, _ value: some Encodable) throws -> ByteBuffer {
        let json = String(decoding: try JSONCoding.encoder().encode(value), as: UTF8.self)
        return ByteBuffer(string: (id.map { "id: \($0)\n" } ?? "") + "event: \(name)\ndata: \(json)\n\n")
    }
}
