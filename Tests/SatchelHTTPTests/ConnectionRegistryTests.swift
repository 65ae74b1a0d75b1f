import NIOCore
import NIOEmbedded
import Testing
@testable import SatchelHTTP

/// Which connection the cap closes to make room, on an event loop whose clock the test moves.
@Suite("Connection cap")
struct ConnectionRegistryTests {
    /// A header timeout of 2 s: a head still not in after 0.5 s is slow.
    static let limits = ConnectionLimits(headerTimeout: .seconds(2), idleTimeout: .seconds(60), maxConnections: 3, reserve: 1)

    /// Opens a connection on `loop` under `registry` (its watch, so it has a place and a deadline).
    static func open(_ registry: ConnectionRegistry, on loop: EmbeddedEventLoop) throws -> (watch: ConnectionWatch, channel: EmbeddedChannel) {
        let channel = EmbeddedChannel(loop: loop)
        try channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        let watch = ConnectionWatch(registry: registry, channel: channel)
        _ = watch.opened()
        return (watch, channel)
    }

    @Test("at the cap a new connection takes an idle connection's place, not that of a head only just begun (a TLS handshake on a loaded host); an idle HTTP/2 connection with no stream is such an idle one")
    func idleBeforeNewHead() throws {
        let loop = EmbeddedEventLoop()
        let registry = ConnectionRegistry(limits: Self.limits)
        let idle = try (0..<2).map { _ in try Self.open(registry, on: loop) }
        for connection in idle {
            connection.watch.multiplexed = true
            connection.watch.enter(.idle)
            loop.advanceTime(by: .milliseconds(10))
        }
        loop.advanceTime(by: .milliseconds(100))
        let handshaking = try Self.open(registry, on: loop)
        loop.advanceTime(by: .milliseconds(100))
        let next = try Self.open(registry, on: loop)
        #expect(next.watch.admission == .accept)
        #expect(handshaking.channel.isActive, "a head 100 ms old is not slow: it keeps its place")
        #expect(!idle[0].channel.isActive && idle[1].channel.isActive, "the longest-idle connection made room")
        #expect(registry.counters.evicted == 1)
    }

    @Test("a head still not in after a quarter of the header timeout is slow: it makes room before an idle connection; with only new heads, the oldest does")
    func slowHeadFirst() throws {
        let loop = EmbeddedEventLoop()
        let registry = ConnectionRegistry(limits: Self.limits)
        let idle = try Self.open(registry, on: loop)
        idle.watch.enter(.idle)
        let slow = try Self.open(registry, on: loop)
        loop.advanceTime(by: .milliseconds(600))
        let fresh = try Self.open(registry, on: loop)
        loop.advanceTime(by: .milliseconds(10))
        _ = try Self.open(registry, on: loop)
        #expect(!slow.channel.isActive, "600 ms without a whole head: slow, closed first")
        #expect(idle.channel.isActive && fresh.channel.isActive)
        // Now two new heads and the idle one: the idle one goes, then the older of the new heads.
        loop.advanceTime(by: .milliseconds(10))
        _ = try Self.open(registry, on: loop)
        #expect(!idle.channel.isActive && fresh.channel.isActive)
        loop.advanceTime(by: .milliseconds(10))
        _ = try Self.open(registry, on: loop)
        #expect(!fresh.channel.isActive, "only new heads left: the oldest made room")
    }

    @Test("connections with a request in progress are never closed to make room: at a cap of busy ones a new connection gets the reserve, then is refused")
    func busyKept() throws {
        let loop = EmbeddedEventLoop()
        let registry = ConnectionRegistry(limits: Self.limits)
        let busy = try (0..<3).map { _ in try Self.open(registry, on: loop) }
        busy[0].watch.enter(.busy)
        busy[1].watch.enter(.readingBody)
        busy[2].watch.enter(.busy)
        loop.advanceTime(by: .seconds(1))
        #expect(try Self.open(registry, on: loop).watch.admission == .reserve)
        #expect(try Self.open(registry, on: loop).watch.admission == .refuse)
        #expect(busy.allSatisfy { $0.channel.isActive } && registry.counters.evicted == 0)
    }
}
