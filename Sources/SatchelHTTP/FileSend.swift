#if canImport(Glibc)
import SatchelBytes
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore

/// Sends a stretch of a file to a plain HTTP/1.1 connection with `sendfile(2)`: the bytes go from the page cache
/// to the socket without passing through the process (a read copies each byte once more, and a read buffer's
/// pages cost as much again).
///
/// Hummingbird's body writer takes byte buffers only, so the body writes a short marker that ``FileSendHandler``,
/// below the HTTP encoder, swaps for the file region. The marker starts with 16 random bytes drawn when the process
/// starts, and it names a region registered for this send only, so no other body can be taken for one. Only for a
/// response whose `Content-Length` is set (a chunked body frames each write, marker included) and a connection
/// without TLS (a TLS handler cannot encrypt a file region).
public enum FileSend {
    /// Sends bytes `range` of the open file `descriptor` (the caller keeps it; it is duplicated) through `writer`,
    /// and returns once the kernel has taken every byte, or when the connection has closed (thrown). Returns false,
    /// having sent nothing, when `channel` cannot send files (no ``FileSendHandler`` in its pipeline): the caller
    /// sends the bytes itself.
    public static func send(_ descriptor: Int32, range: Range<Int64>, on channel: any Channel,
                            to writer: inout any ResponseBodyWriter) async throws -> Bool {
        guard !range.isEmpty, range.lowerBound >= 0, (try? await channel.pipeline.handler(type: FileSendHandler.self).get()) != nil else {
            return false
        }
        // A file already shorter than the range goes the caller's way (which reports it); sendfile would find no
        // bytes to send and NIO would retry it without end.
        var info = stat()
        guard fstat(descriptor, &info) == 0, Int64(info.st_size) >= range.upperBound else { return false }
        let copy = dup(descriptor)
        guard copy >= 0 else { return false }
        let handle = NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: copy)
        let sent = channel.eventLoop.makePromise(of: Void.self)
        let id = register(Pending(handle: handle, range: Int(range.lowerBound)..<Int(range.upperBound), sent: sent,
                                  channel: ObjectIdentifier(channel)))
        // The region is taken once: by the handler when the marker reaches it, or, when it never does, by the
        // handler's removal as the connection closes; registered after that, it is abandoned here.
        if !channel.isActive { abandon(id, ChannelError.ioOnClosedChannel) }
        do {
            try await writer.write(marker(id))
        } catch {
            abandon(id, error)
            throw error
        }
        try await sent.futureResult.get()
        return true
    }

    /// A region waiting for its marker to reach the handler.
    struct Pending {
        let handle: NIOFileHandle
        let range: Range<Int>
        let sent: EventLoopPromise<Void>
        /// The connection it goes to.
        let channel: ObjectIdentifier
    }

    /// The marker's first bytes: random, drawn once per process.
    static let magic: [UInt8] = (0..<16).map { _ in UInt8.random(in: 0...255) }
    /// A marker's length: the magic and an 8-byte region number.
    static let markerLength = 24
    private static let pending = Locked((next: UInt64(0), regions: [UInt64: Pending]()))

    static func register(_ region: Pending) -> UInt64 {
        pending.withLock { state in
            state.next &+= 1
            state.regions[state.next] = region
            return state.next
        }
    }

    /// Regions registered for `channel` and not yet sent or abandoned.
    static func pendingCount(of channel: ObjectIdentifier) -> Int {
        pending.withLock { $0.regions.values.filter { $0.channel == channel }.count }
    }

    /// The region `id` names, removed; nil when it was taken already.
    static func take(_ id: UInt64) -> Pending? {
        pending.withLock { $0.regions.removeValue(forKey: id) }
    }

    /// Closes the region `id` and fails its send, unless it was taken already.
    private static func abandon(_ id: UInt64, _ error: any Error) {
        guard let region = take(id) else { return }
        try? region.handle.close()
        region.sent.fail(error)
    }

    /// Closes every region still waiting for `channel` and fails their sends (the connection has closed).
    static func abandonAll(of channel: ObjectIdentifier) {
        let left = pending.withLock { state in
            let ids = state.regions.filter { $0.value.channel == channel }.map(\.key)
            return ids.compactMap { state.regions.removeValue(forKey: $0) }
        }
        for region in left {
            try? region.handle.close()
            region.sent.fail(ChannelError.ioOnClosedChannel)
        }
    }

    static func marker(_ id: UInt64) -> ByteBuffer {
        var buffer = ByteBuffer(bytes: magic)
        buffer.writeInteger(id)
        return buffer
    }

    /// The region number of a marker, nil for any other buffer.
    static func markedRegion(_ buffer: ByteBuffer) -> UInt64? {
        guard buffer.readableBytes == markerLength,
              buffer.readableBytesView.prefix(magic.count).elementsEqual(magic) else { return nil }
        return buffer.getInteger(at: buffer.readerIndex + magic.count, as: UInt64.self)
    }
}

/// Below the HTTP encoder: swaps a ``FileSend`` marker for its file region (sent with `sendfile(2)` by the
/// channel), passes every other write on. The region's file is closed once written or failed; regions whose
/// marker never came are closed when the handler leaves the closing connection.
public final class FileSendHandler: ChannelOutboundHandler, RemovableChannelHandler, Sendable {
    public typealias OutboundIn = IOData
    public typealias OutboundOut = IOData

    public init() {}

    public func handlerRemoved(context: ChannelHandlerContext) {
        FileSend.abandonAll(of: ObjectIdentifier(context.channel))
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case let .byteBuffer(buffer) = unwrapOutboundIn(data), let id = FileSend.markedRegion(buffer),
              let region = FileSend.take(id) else {
            context.write(data, promise: promise)
            return
        }
        let written = context.eventLoop.makePromise(of: Void.self)
        let file = FileRegion(fileHandle: region.handle, readerIndex: region.range.lowerBound, endIndex: region.range.upperBound)
        context.write(wrapOutboundOut(.fileRegion(file)), promise: written)
        written.futureResult.whenComplete { result in
            try? region.handle.close()
            region.sent.completeWith(result)
            promise?.completeWith(result)
        }
    }
}
