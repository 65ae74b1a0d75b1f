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
import SatchelMedia
import SatchelProtection
import SatchelStreams
import SatchelSystem

/// The body of one answer: bytes already in memory, or a stretch of a file streamed from disk as it is read,
/// clear or AES-128 decrypted on the way (the first bytes go out before the rest is read).
enum PlaybackBody: Sendable {
    /// Bytes in memory.
    case bytes([UInt8])
    /// Buffers in memory, sent one after the other (stretches of one read, made clear where they lie).
    case buffers([ByteBuffer])
    /// `range` of a stored file, as stored.
    case file(ConfinedFile, range: ClosedRange<Int64>)
    /// `range` of the clear content of a stored AES-128 segment (whole-segment CBC, IV `iv`).
    case aes128(ConfinedFile, cipher: SegmentCipher, iv: [UInt8], range: ClosedRange<Int64>)
    /// The clear form of a stored CMAF `cenc` / `cbcs` segment, fragment by fragment as `plan` gives it.
    case clearFMP4(ConfinedFile, plan: FMP4ClearPlan, decryptor: FMP4Decryptor, cipher: CommonEncryption)
    /// The clear form of a stored SAMPLE-AES MPEG-TS segment, re-muxed PES packet by PES packet as it is read:
    /// `head` (the clear bytes of the part already read, up to `from`), then the rest; its length is known only at
    /// the end (sent chunked). A failure mid-way is given to `failed` (the answer ends short).
    case clearTS(ConfinedFile, transport: SampleAESTransport, from: Int64, head: [UInt8], done: @Sendable (TSContinuity) -> Void,
                 failed: @Sendable (String) async -> Void)
    /// A file arriving from the origin, sent on as it arrives.
    case origin(OriginFeed)
    /// `range` of a single media file's clear form, made from its stored bytes (disk or origin) as it is sent.
    case clearFile(SingleFileStream, range: ClosedRange<Int64>)
    /// `range` of a protected file's plain bytes, the chunks it touches opened one after the other.
    case protectedFile(ProtectedFileReader, range: ClosedRange<Int64>)
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
        case let .buffers(buffers):
            for buffer in buffers { try await writer.write(buffer) }
        case let .file(file, range):
            try await FileBody.write(file, range: range, to: &writer, on: channel)
        case let .origin(feed):
            try await feed.write(to: &writer)
        case let .clearFile(stream, range):
            try await stream.write(range, to: &writer)
        case let .protectedFile(reader, range):
            let wanted = UInt64(range.lowerBound)..<UInt64(range.upperBound + 1)
            guard let chunks = reader.chunks(for: wanted) else { return }
            for index in chunks {
                let plain = try await reader.chunk(index)
                let start = index * UInt64(reader.header.chunkSize)
                let from = Int(max(wanted.lowerBound, start) - start), to = Int(min(wanted.upperBound, start + UInt64(plain.count)) - start)
                try await writer.write(ByteBuffer(bytes: plain[from..<to]))
            }
        case let .clearTS(file, transport, from, head, done, failed):
            var transport = transport
            let (path, size) = (file.name, file.size)
            var offset = from
            try await writer.write(ByteBuffer(bytes: head))
            do {
                while offset < size {
                    let piece = try file.bytes(Int(min(size - offset, Int64(Self.transportChunk))), at: offset)
                    offset += Int64(piece.count)
                    // The clear packets go straight from where they were made into the buffer sent (one copy).
                    var clear = ByteBuffer()
                    clear.reserveCapacity(piece.count + 2 * 188)
                    try Self.clearing(path) { () throws(ProtectionError) in try transport.clear(piece[...]) { clear.writeBytes($0) } }
                    if clear.readableBytes > 0 { try await writer.write(clear) }
                }
                var last = ByteBuffer()
                try Self.clearing(path) { () throws(ProtectionError) in try transport.finish { last.writeBytes($0) } }
                try await writer.write(last)
                done(transport.continuity)
            } catch let PlaybackError.invalidContent(reason) {
                await failed(reason)
                throw PlaybackError.invalidContent(reason)
            }
        case let .clearFMP4(file, plan, decryptor, cipher):
            let path = file.name
            for part in plan.parts {
                switch part {
                case let .made(bytes):
                    try await writer.write(ByteBuffer(bytes: bytes))
                case let .stored(range):
                    var offset = range.lowerBound
                    while offset < range.upperBound {
                        let buffer = try file.segment(Int(min(range.upperBound - offset, Int64(Self.chunk))), at: offset)
                        try await writer.write(buffer)
                        offset += Int64(buffer.readableBytes)
                    }
                case let .decrypted(range, samples):
                    // Read straight into the buffer sent and decrypted there.
                    var buffer = try file.segment(Int(range.upperBound - range.lowerBound), at: range.lowerBound)
                    try Self.decrypt(&buffer, of: path) { (bytes) throws(ProtectionError) in
                        try decryptor.decrypt(samples, in: bytes, at: range.lowerBound, cipher: cipher)
                    }
                    try await writer.write(buffer)
                }
            }
        case let .aes128(file, cipher, iv, range):
            // CBC decrypts from any block given the cipher block before it: start at the block holding the range.
            let path = file.name
            let firstBlock = range.lowerBound / 16 * 16
            var chain = firstBlock == 0 ? iv : Array(try file.segment(16, at: firstBlock - 16).readableBytesView)
            var position = firstBlock  // clear offset of the next block read
            while position <= range.upperBound {
                let wanted = min(Int64(Self.chunk), (range.upperBound / 16 + 1) * 16 - position)
                // Read straight into the buffer sent and decrypted there.
                var buffer = try file.segment(Int(wanted), at: position)
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
        RequestTiming.timed(.decryption) {
            buffer.withUnsafeMutableReadableBytes { bytes in
                do throws(ProtectionError) { try body(bytes) } catch { failure = error }
            }
        }
        if let failure { throw .invalidContent("\(path.split(separator: "/").last ?? "") does not decrypt: \(failure)") }
    }

    /// The clear bytes `body` makes of a piece of the segment at `path`; a failure is invalid content, named by the
    /// file's name.
    static func clearing<Value>(_ path: String, _ body: () throws(ProtectionError) -> Value) throws(PlaybackError) -> Value {
        do { return try RequestTiming.timed(.decryption, body) } catch { throw .invalidContent("\(path.split(separator: "/").last ?? "") does not decrypt: \(error)") }
    }
}

extension ConfinedFile {
    /// Exactly `count` bytes at `offset` (``buffer(_:at:)``); a failure is the proxy's storage error.
    func segment(_ count: Int, at offset: Int64) throws(PlaybackError) -> ByteBuffer {
        do { return try buffer(count, at: offset) } catch { throw .storage("\(name) shrank or failed while it was served") }
    }

    /// The same, as bytes to work on.
    func bytes(_ count: Int, at offset: Int64) throws(PlaybackError) -> [UInt8] {
        do { return try read(count, at: offset) } catch { throw .storage("\(name) shrank or failed while it was served") }
    }
}

/// A file on its way from the origin to the player: each buffer is sent on as it arrives; once the whole file has
/// come (exactly the announced length, when one was announced), `keep` may store it. A failure of the origin
/// mid-file — an error, more than announced or than `limit`, a trickle below the pace — is reported and ends the
/// answer short (the player asks again). Nothing is held beyond what `keep` needs.
struct OriginFeed: Sendable {
    /// What a media file's HTML page in its place is reported as.
    static let webPage = "the origin sent an HTML page instead of media (a Wi-Fi hotspot's sign-in page?): check the network connection"

    let body: HTTPClientResponse.Body
    /// The announced length (nil: none; the answer is sent chunked).
    let length: Int64?
    /// The most bytes taken from the origin for one file.
    let limit: Int64
    /// The slowest the origin may send it.
    let slowest: OriginPace
    let keep: (@Sendable ([UInt8]) async -> Void)?
    let failed: @Sendable (String) async -> Void
    /// The file is media: an HTML page in its place (a Wi-Fi hotspot's sign-in page) is refused, reported through
    /// `invalid`, and never sent on.
    var media = false
    var invalid: @Sendable (String) async -> Void = { _ in }

    func write(to writer: inout any ResponseBodyWriter) async throws {
        var kept: [UInt8] = []
        if keep != nil, let length { kept.reserveCapacity(Int(length)) }
        var received: Int64 = 0
        var pace = slowest.pace(for: length, limit: limit)
        var buffers = body.makeAsyncIterator()
        while true {
            let next: ByteBuffer?
            let asked = ContinuousClock.now
            do { next = try await buffers.next() } catch {
                await failed(OriginFetcher.reason(error))
                throw PlaybackError.originUnreachable(OriginFetcher.reason(error))
            }
            RequestTiming.current?.add(.origin, ContinuousClock.now - asked, bytes: next?.readableBytes ?? 0)
            guard let buffer = next else { break }
            if media, received == 0, MIMEType.looksLikeWebPage(buffer.readableBytesView) {
                await invalid(OriginFeed.webPage)
                throw PlaybackError.invalidContent(OriginFeed.webPage)
            }
            received += Int64(buffer.readableBytes)
            if let reason = pace.count(buffer.readableBytes) {
                await failed("the origin is too slow: \(reason)")
                throw PlaybackError.originUnreachable("the origin is too slow")
            }
            guard received <= (length ?? limit) else {
                await failed("the origin sent more than \(length.map { "the \($0) bytes it announced" } ?? "\(limit >> 20) MB")")
                throw PlaybackError.originUnreachable("the origin sent more than it may")
            }
            if keep != nil { kept += buffer.readableBytesView }
            try await writer.write(buffer)
        }
        if let length, received != length {
            await failed("the origin sent \(received) of \(length) bytes")
            throw PlaybackError.originUnreachable("the origin cut the file short")
        }
        await keep?(kept)
    }
}
