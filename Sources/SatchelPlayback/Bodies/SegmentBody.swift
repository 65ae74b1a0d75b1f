import Hummingbird
import NIOCore
import SatchelHTTP
import SatchelProtection
import SatchelSystem

/// What a body does to the stored bytes on their way to the player: the protection it removes.
enum SegmentTransform: String, Sendable {
    /// Sent as stored (clear content, a playlist, a forwarded license).
    case none
    /// Whole-segment AES-128 CBC removed.
    case aes128 = "aes-128"
    /// SAMPLE-AES removed from an MPEG-TS segment, its packets re-muxed.
    case sampleAES = "sample-aes"
    /// Common encryption (`cenc`, `cbcs`, PIFF) removed from fMP4: samples decrypted, `senc`/`sinf`/`pssh` gone.
    case commonEncryption = "common-encryption"
    /// DASH or Smooth segments decrypted and re-muxed to MPEG-2 TS.
    case transcribed = "dash-to-ts"
    /// A Satchel protected file's chunks opened.
    case protectedFile = "protected-file"
}

/// The bytes of one answer on their way to a player: stored bytes (disk, origin, memory) and the transform that
/// makes them clear. Writing ends early when the player goes away (the write throws, what was opened is closed).
protocol SegmentBody: Sendable {
    /// The protection the body removes.
    var transform: SegmentTransform { get }
    /// Writes the body to `writer`; a stored file may go with `sendfile(2)` when the connection `channel` can send
    /// files (``FileSend``).
    func write(to writer: inout any ResponseBodyWriter, on channel: (any Channel)?) async throws
}

/// Bytes in memory (made whole, or a playlist), sent one buffer after the other.
struct MemoryBody: SegmentBody {
    let buffers: [ByteBuffer]
    let transform: SegmentTransform

    init(_ buffers: [ByteBuffer], transform: SegmentTransform) {
        self.buffers = buffers
        self.transform = transform
    }

    init(_ bytes: [UInt8], transform: SegmentTransform) {
        self.init(bytes.isEmpty ? [ByteBuffer]() : [ByteBuffer(bytes: bytes)], transform: transform)
    }

    /// No bytes (an empty file), made clear by `transform`.
    static func empty(_ transform: SegmentTransform) -> MemoryBody {
        MemoryBody([ByteBuffer](), transform: transform)
    }

    func write(to writer: inout any ResponseBodyWriter, on channel: (any Channel)?) async throws {
        for buffer in buffers { try await writer.write(buffer) }
    }
}

/// A range of a stored file, as stored.
struct FileRangeBody: SegmentBody {
    let file: ConfinedFile
    let range: ClosedRange<Int64>
    var transform: SegmentTransform { .none }

    func write(to writer: inout any ResponseBodyWriter, on channel: (any Channel)?) async throws {
        try await FileBody.write(file, range: range, to: &writer, on: channel)
    }
}

/// How the bodies read and make clear: chunk sizes, and decryption timed and its failures named.
enum Clearing {
    /// Bytes read from disk at a time.
    static let chunk = 256 << 10
    /// Bytes of an MPEG-TS segment read at a time (whole transport packets).
    static let transportChunk = 188 << 10

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
        if let failure { throw .invalidContent("\(name(path)) does not decrypt: \(failure)") }
    }

    /// The clear bytes `body` makes of the file at `path`, or a piece of it; a failure is invalid content, named by
    /// the file's name.
    static func clear<Value>(_ path: String, _ body: () throws(ProtectionError) -> Value) throws(PlaybackError) -> Value {
        do { return try RequestTiming.timed(.decryption, body) } catch { throw .invalidContent("\(name(path)) does not decrypt: \(error)") }
    }

    /// The last component of `path`: what an error names.
    static func name(_ path: String) -> Substring { path.split(separator: "/").last ?? "" }
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
