import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOEmbedded
@testable import SatchelHTTP
import SatchelBytes
import SatchelSystem
import SatchelTestSupport
import Testing

/// `FileSend`: a stretch of a file goes to the socket with sendfile, below the HTTP encoder, over real sockets.
@Suite("HTTP kit: files sent with sendfile", .serialized, .timeLimit(.minutes(2)))
struct FileSendTests {
    /// Serves `GET /file/{from}/{to}` (bytes from..<to of `path`) with `FileSend`, recording whether it sent the file
    /// itself; `GET /marker/{id}` answers a marker-shaped body for a region never registered.
    struct Routes: RouteGroup {
        let path: String
        let sent: Locked<[Bool]>
        let failures: Locked<Int>
        /// The connections files were sent on.
        let channels = Locked<Set<ObjectIdentifier>>([])

        /// Regions still registered for those connections.
        var pending: Int { channels.current.reduce(0) { $0 + FileSend.pendingCount(of: $1) } }

        func register(on router: Router<SatchelRequestContext>) {
            router.get("/file/{from}/{to}") { _, context in
                let from = Int64(context.parameters.get("from") ?? "") ?? 0
                let to = Int64(context.parameters.get("to") ?? "") ?? 0
                let channel = context.channel
                channels.withLock { _ = $0.insert(ObjectIdentifier(channel)) }
                let (path, sent, failures) = (self.path, self.sent, self.failures)
                return Response(status: .ok, headers: [.contentType: "application/octet-stream"], body: ResponseBody(contentLength: Int(to - from)) { writer in
                    let fd = open(path, O_RDONLY | O_CLOEXEC)
                    defer { close(fd) }
                    do {
                        let used = try await FileSend.send(fd, range: from..<to, on: channel, to: &writer)
                        sent.withLock { $0.append(used) }
                        if !used {
                            let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
                            guard to <= bytes.count else { throw HTTPError(.internalServerError, message: "the file is shorter than the range") }
                            try await writer.write(ByteBuffer(bytes: bytes[Int(from)..<Int(to)]))
                        }
                    } catch {
                        failures.withLock { $0 += 1 }
                        throw error
                    }
                    try await writer.finish(nil)
                })
            }
            router.get("/marker/{id}") { _, context -> ByteBuffer in
                var buffer = ByteBuffer(bytes: FileSend.magic)
                buffer.writeInteger(UInt64(context.parameters.get("id") ?? "") ?? 0)
                return buffer
            }
        }
    }

    static func fixture(_ size: Int) throws -> (path: String, bytes: [UInt8]) {
        let dir = try TestMedia.temporaryDirectory("file-send")
        let bytes = (0..<size).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) }  // no period a range could hide in
        let path = dir.appendingPathComponent("media.bin").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return (path, bytes)
    }

    static func app(_ routes: Routes) -> some ApplicationProtocol {
        var builder = ApplicationBuilder(port: 0, logger: .init(label: "file-send"))
        builder.add(routes)
        return builder.build()
    }

    @Test("a file and ranges of it (first byte, middle, last byte) arrive exact, sent by sendfile; a marker-shaped body of no region passes as it is")
    func ranges() async throws {
        let (path, bytes) = try Self.fixture(3 << 20)
        let routes = Routes(path: path, sent: Locked([]), failures: Locked(0))
        try await Self.app(routes).test(.live) { client in
            for (from, to) in [(0, bytes.count), (0, 1), (1_000_001, 2_500_000), (bytes.count - 1, bytes.count)] {
                let response = try await client.execute(uri: "/file/\(from)/\(to)", method: .get)
                #expect(response.status == .ok)
                #expect(response.headers[.contentLength] == String(to - from))
                #expect(Array(response.body.readableBytesView) == Array(bytes[from..<to]), "bytes \(from)..<\(to)")
            }
            let marker = try await client.execute(uri: "/marker/999999", method: .get)
            var expected = ByteBuffer(bytes: FileSend.magic)
            expected.writeInteger(UInt64(999_999))
            #expect(marker.body == expected, "a marker that names no region is an ordinary body")
        }
        #expect(routes.sent.current == [true, true, true, true], "every range went by sendfile")
        #expect(routes.pending == 0)
    }

    @Test("without the handler (the router test client) nothing is sent by sendfile: the caller sends the bytes")
    func fallback() async throws {
        let (path, bytes) = try Self.fixture(100_000)
        let routes = Routes(path: path, sent: Locked([]), failures: Locked(0))
        try await Self.app(routes).test(.router) { client in
            let response = try await client.execute(uri: "/file/10/90000", method: .get)
            #expect(Array(response.body.readableBytesView) == Array(bytes[10..<90000]))
        }
        #expect(routes.sent.current == [false])
    }

    @Test("a range past the file's end is not handed to sendfile (it would spin): the caller's own path answers")
    func pastTheEnd() async throws {
        let (path, _) = try Self.fixture(1_000)
        let routes = Routes(path: path, sent: Locked([]), failures: Locked(0))
        try await Self.app(routes).test(.live) { client in
            _ = try? await client.execute(uri: "/file/500/2000", method: .get)
        }
        #expect(routes.sent.current.first == false, "the caller sent (or failed to send) the bytes itself")
        #expect(routes.pending == 0)
    }

    @Test("a player that leaves mid-file: the send ends with an error, the region's file is closed, the server goes on")
    func disconnect() async throws {
        // More than loopback's socket buffers hold, so the server is mid-file when the player leaves.
        let dir = try TestMedia.temporaryDirectory("file-send-leave")
        let path = dir.appendingPathComponent("big.bin").path
        let bytes = Data(repeating: 7, count: 24 << 20)
        try bytes.write(to: URL(fileURLWithPath: path))
        let routes = Routes(path: path, sent: Locked([]), failures: Locked(0))
        try await Self.app(routes).test(.live) { client in
            let port = try #require(client.port)
            try await TestMedia.offloaded {
                let connection = try RawConnection(port: port)
                connection.send("GET /file/0/\(bytes.count) HTTP/1.1\r\nHost: a\r\n\r\n")
                _ = connection.read(upTo: 100_000)  // the head and the first bytes; then the socket closes unread
            }
            for _ in 0..<200 where routes.failures.current == 0 { try await Task.sleep(for: .milliseconds(25)) }
            #expect(routes.failures.current == 1)
            #expect(routes.pending == 0, "no region is left registered")
            // The server goes on, for a player on a connection of its own (the test client's own connection was reset
            // under a full suite's load, once and then again when tried twice).
            let after = try await TestMedia.offloaded { () throws -> String in
                let connection = try RawConnection(port: port)
                connection.send("GET /file/5/10 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
                return connection.readResponse()
            }
            #expect(after.hasPrefix("HTTP/1.1 200") && after.hasSuffix("\r\n\r\n\u{7}\u{7}\u{7}\u{7}\u{7}"), "\(after.debugDescription)")
        }
    }

    @Test("the handler swaps a registered marker for its file region and passes other bytes; regions whose marker never came are closed with the connection")
    func handler() throws {
        let (path, _) = try Self.fixture(10_000)
        let channel = EmbeddedChannel(handler: FileSendHandler())
        func region(_ range: Range<Int>) throws -> (UInt64, EventLoopFuture<Void>) {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            try #require(fd >= 0)
            let sent = channel.eventLoop.makePromise(of: Void.self)
            let id = FileSend.register(FileSend.Pending(handle: NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: fd), range: range,
                                                        sent: sent, channel: ObjectIdentifier(channel)))
            return (id, sent.futureResult)
        }
        let (first, firstSent) = try region(100..<9_000)
        try channel.writeOutbound(IOData.byteBuffer(FileSend.marker(first)))
        guard case let .fileRegion(file)? = try channel.readOutbound(as: IOData.self) else {
            Issue.record("the marker was not swapped for a file region")
            return
        }
        #expect(file.readerIndex == 100 && file.endIndex == 9_000)
        _ = firstSent  // completes when the channel has written the region (an embedded channel never does)
        try channel.writeOutbound(IOData.byteBuffer(ByteBuffer(bytes: [1, 2, 3])))
        #expect(try channel.readOutbound(as: IOData.self) == .byteBuffer(ByteBuffer(bytes: [1, 2, 3])))
        // A region whose marker never reaches the handler: the connection closes, the send fails, nothing stays registered.
        let (_, orphanSent) = try region(0..<10)
        let failed = Locked(false)
        orphanSent.whenFailure { _ in failed.withLock { $0 = true } }
        _ = try? channel.finish()
        #expect(failed.current)
        #expect(FileSend.pendingCount(of: ObjectIdentifier(channel)) == 0)
    }
}
