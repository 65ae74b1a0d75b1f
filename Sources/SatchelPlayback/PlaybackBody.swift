#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import AsyncHTTPClient
import Foundation
import Hummingbird
import NIOCore
import NIOFoundationCompat
import SatchelHTTP
import SatchelProtection

/// The body of one answer: bytes already in memory, or a stretch of a file streamed from disk as it is read,
/// clear or AES-128 decrypted on the way (the first bytes go out before the rest is read).
enum PlaybackBody: Sendable {
    /// Bytes in memory.
    case bytes([UInt8])
    /// `range` of the file at `path`, as stored.
    case file(path: String, range: ClosedRange<Int64>)
    /// `range` of the clear content of an AES-128 segment at `path` (whole-segment CBC, IV `iv`).
    case aes128(path: String, cipher: SegmentCipher, iv: [UInt8], range: ClosedRange<Int64>)
    /// The clear form of a CMAF `cenc` / `cbcs` segment at `path`, fragment by fragment as `plan` gives it.
    case clearFMP4(path: String, plan: FMP4ClearPlan, decryptor: FMP4Decryptor, cipher: CommonEncryption)
    /// The clear form of a SAMPLE-AES MPEG-TS segment at `path` (`size` bytes stored), re-muxed PES packet by PES
    /// packet as it is read: `head` (the clear bytes of the part already read, up to `from`), then the rest; its
    /// length is known only at the end (sent chunked). A failure mid-way is given to `failed` (the answer ends short).
    case clearTS(path: String, size: Int64, transport: SampleAESTransport, from: Int64, head: [UInt8], failed: @Sendable (String) async -> Void)
    /// A file arriving from the origin, sent on as it arrives.
    case origin(OriginFeed)
    /// Nothing (an empty file).
    case empty

    /// Bytes read from disk at a time.
    static let chunk = 256 << 10
    /// Bytes of an MPEG-TS segment read at a time (whole transport packets).
    static let transportChunk = 188 << 10

    /// Writes the body; a player that goes away ends it (the write throws, the file is closed). A stored file (or a
    /// range of one) goes with `sendfile(2)` when the connection `channel` can send files (``FileSend``), else
    /// read into buffers.
    func write(to writer: inout any ResponseBodyWriter, on channel: (any Channel)? = nil) async throws {
        switch self {
        case .empty:
            return
        case let .bytes(bytes):
            try await writer.write(ByteBuffer(bytes: bytes))
        case let .file(path, range):
            let file = try OpenFile(path)
            if let channel, try await FileSend.send(file.descriptor, range: range.lowerBound..<(range.upperBound + 1), on: channel, to: &writer) {
                return
            }
            var offset = range.lowerBound
            while offset <= range.upperBound {
                let buffer = try file.read(Int(min(range.upperBound - offset + 1, Int64(Self.chunk))), at: offset)
                try await writer.write(buffer)
                offset += Int64(buffer.readableBytes)
            }
        case let .origin(feed):
            try await feed.write(to: &writer)
        case let .clearTS(path, size, transport, from, head, failed):
            var transport = transport
            let file = try OpenFile(path)
            var offset = from
            try await writer.write(ByteBuffer(bytes: head))
            do {
                while offset < size {
                    let buffer = try file.read(Int(min(size - offset, Int64(Self.transportChunk))), at: offset)
                    offset += Int64(buffer.readableBytes)
                    let clear = try Self.clearing(path) { () throws(ProtectionError) in try transport.clear(Array(buffer.readableBytesView)[...]) }
                    if !clear.isEmpty { try await writer.write(ByteBuffer(bytes: clear)) }
                }
                try await writer.write(ByteBuffer(bytes: try Self.clearing(path) { () throws(ProtectionError) in try transport.finish() }))
            } catch let PlaybackError.invalidContent(reason) {
                await failed(reason)
                throw PlaybackError.invalidContent(reason)
            }
        case let .clearFMP4(path, plan, decryptor, cipher):
            let file = try OpenFile(path)
            for part in plan.parts {
                switch part {
                case let .made(bytes):
                    try await writer.write(ByteBuffer(bytes: bytes))
                case let .stored(range):
                    var offset = range.lowerBound
                    while offset < range.upperBound {
                        let buffer = try file.read(Int(min(range.upperBound - offset, Int64(Self.chunk))), at: offset)
                        try await writer.write(buffer)
                        offset += Int64(buffer.readableBytes)
                    }
                case let .decrypted(range, samples):
                    // Read straight into the buffer sent and decrypted there.
                    var buffer = try file.read(Int(range.upperBound - range.lowerBound), at: range.lowerBound)
                    try Self.decrypt(&buffer, of: path) { (bytes) throws(ProtectionError) in
                        try decryptor.decrypt(samples, in: bytes, at: range.lowerBound, cipher: cipher)
                    }
                    try await writer.write(buffer)
                }
            }
        case let .aes128(path, cipher, iv, range):
            // CBC decrypts from any block given the cipher block before it: start at the block holding the range.
            let file = try OpenFile(path)
            let firstBlock = range.lowerBound / 16 * 16
            var chain = firstBlock == 0 ? iv : Array(try file.read(16, at: firstBlock - 16).readableBytesView)
            var position = firstBlock  // clear offset of the next block read
            while position <= range.upperBound {
                let wanted = min(Int64(Self.chunk), (range.upperBound / 16 + 1) * 16 - position)
                // Read straight into the buffer sent and decrypted there.
                var buffer = try file.read(Int(wanted), at: position)
                let count = buffer.readableBytes
                guard count % 16 == 0, count > 0 else { throw PlaybackError.invalidContent("\(path.split(separator: "/").last ?? ""): not whole AES blocks") }
                let next = Array(buffer.readableBytesView.suffix(16))
                try Self.decrypt(&buffer, of: path) { (blocks) throws(ProtectionError) in try cipher.decryptBlocks(in: blocks, iv: chain) }
                chain = next
                let from = Int(max(range.lowerBound - position, 0))
                let to = Int(min(range.upperBound - position + 1, Int64(count)))
                if from < to, let clear = buffer.getSlice(at: buffer.readerIndex + from, length: to - from) { try await writer.write(clear) }
                position += Int64(count)
            }
        }
    }

    /// Decrypts the readable bytes of `buffer` (read from the file at `path`) where they lie; a failure is
    /// invalid content, named by the file's name.
    static func decrypt(_ buffer: inout ByteBuffer, of path: String,
                        _ body: (UnsafeMutableRawBufferPointer) throws(ProtectionError) -> Void) throws(PlaybackError) {
        var failure: ProtectionError?
        buffer.withUnsafeMutableReadableBytes { bytes in
            do throws(ProtectionError) { try body(bytes) } catch { failure = error }
        }
        if let failure { throw .invalidContent("\(path.split(separator: "/").last ?? "") does not decrypt: \(failure)") }
    }

    /// The clear bytes `body` makes of a piece of the segment at `path`; a failure is invalid content, named by the
    /// file's name.
    static func clearing(_ path: String, _ body: () throws(ProtectionError) -> [UInt8]) throws(PlaybackError) -> [UInt8] {
        do { return try body() } catch { throw .invalidContent("\(path.split(separator: "/").last ?? "") does not decrypt: \(error)") }
    }

    /// A file open for reading by offset (pread straight into the buffer sent; closed when released).
    final class OpenFile {
        let descriptor: Int32

        init(_ path: String) throws {
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw PlaybackError.notFound }
        }

        deinit { close(descriptor) }

        /// Exactly `count` bytes at `offset` (a file that shrank while served is an error, never a short answer).
        func read(_ count: Int, at offset: Int64) throws -> ByteBuffer {
            var buffer = ByteBufferAllocator().buffer(capacity: count)
            var filled = 0
            while filled < count {
                var failure: Int32 = 0
                let got = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count - filled) { pointer in
                    let read = pread(descriptor, pointer.baseAddress, count - filled, off_t(offset) + off_t(filled))
                    if read < 0 { failure = errno }
                    return max(read, 0)  // the buffer moves on by what was read, never by an error code
                }
                if failure == EINTR { continue }
                guard got > 0 else { throw PlaybackError.storage("the file shrank or failed while it was served") }
                filled += got
            }
            return buffer
        }
    }
}

/// A file on its way from the origin to the player: each buffer is sent on as it arrives; once the whole file has
/// come (exactly the announced length), `keep` may store it. A failure of the origin mid-file is reported and
/// ends the answer short (the player asks again).
struct OriginFeed: Sendable {
    let body: HTTPClientResponse.Body
    let length: Int64
    let keep: (@Sendable ([UInt8]) -> Void)?
    let failed: @Sendable (String) async -> Void

    func write(to writer: inout any ResponseBodyWriter) async throws {
        var kept: [UInt8] = []
        if keep != nil { kept.reserveCapacity(Int(length)) }
        var received: Int64 = 0
        var buffers = body.makeAsyncIterator()
        while true {
            let next: ByteBuffer?
            do { next = try await buffers.next() } catch {
                await failed(OriginFetcher.reason(error))
                throw PlaybackError.originUnreachable(OriginFetcher.reason(error))
            }
            guard let buffer = next else { break }
            received += Int64(buffer.readableBytes)
            guard received <= length else {
                await failed("the origin sent more than the \(length) bytes it announced")
                throw PlaybackError.originUnreachable("the origin sent more than it announced")
            }
            if keep != nil { kept += buffer.readableBytesView }
            try await writer.write(buffer)
        }
        guard received == length else {
            await failed("the origin sent \(received) of \(length) bytes")
            throw PlaybackError.originUnreachable("the origin cut the file short")
        }
        keep?(kept)
    }
}
