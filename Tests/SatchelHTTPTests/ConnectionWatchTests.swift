import NIOCore
import NIOEmbedded
import Testing
@testable import SatchelHTTP

/// A connection's deadlines on an event loop whose clock the test moves (no sleeping, no load sensitivity).
@Suite("Connection deadlines")
struct ConnectionWatchTests {
    @Test("an idle connection is closed at the idle timeout even when the header timer had moved on to a body's longer deadline (it was closed only when that longer timer fired)")
    func idleAfterLongerTimer() throws {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        try channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        let limits = ConnectionLimits(headerTimeout: .seconds(1), bodyTimeout: .seconds(30), idleTimeout: .milliseconds(1500), maxConnections: 8, reserve: 2)
        let watch = ConnectionWatch(registry: ConnectionRegistry(limits: limits), channel: channel)
        #expect(watch.opened() == .accept)
        loop.advanceTime(by: .milliseconds(900))
        watch.enter(.readingBody)  // the head came: the body's deadline is 30 s away
        loop.advanceTime(by: .milliseconds(200))  // the header timer fires, finds nothing due, and waits for the body's deadline
        #expect(channel.isActive)
        watch.enter(.busy)
        watch.enter(.idle)  // answered: idle, 1.5 s
        loop.advanceTime(by: .milliseconds(1400))
        #expect(channel.isActive, "not before the idle timeout")
        loop.advanceTime(by: .milliseconds(200))
        #expect(!channel.isActive, "closed at the idle timeout, not 30 s later")
    }

    @Test("a later deadline moves without a new timer: the armed one re-arms when it fires; a busy connection has none")
    func laterAndBusy() throws {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        try channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        let limits = ConnectionLimits(headerTimeout: .seconds(1), bodyTimeout: .seconds(2), idleTimeout: .seconds(3), maxConnections: 8, reserve: 2)
        let watch = ConnectionWatch(registry: ConnectionRegistry(limits: limits), channel: channel)
        _ = watch.opened()
        watch.enter(.busy)
        loop.advanceTime(by: .seconds(60))
        #expect(channel.isActive, "busy: no deadline")
        watch.enter(.idle)
        loop.advanceTime(by: .milliseconds(2_900))
        watch.enter(.readingHead)  // a new request begins: 1 s from now
        loop.advanceTime(by: .milliseconds(900))
        #expect(channel.isActive)
        loop.advanceTime(by: .milliseconds(200))
        #expect(!channel.isActive, "a head that does not come in time is closed")
    }
}
