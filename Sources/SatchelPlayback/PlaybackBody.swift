import Foundation
import Hummingbird
import NIOCore
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
    /// Nothing (an empty file).
    case empty

    /// Bytes read from disk at a time.
    static let chunk = 256 << 10

    /// Writes the body; a player that goes away ends it (the write throws, the file is closed).
    func write(to writer: inout any ResponseBodyWriter) async throws {
        switch self {
        case .empty:
            return
        case let .bytes(bytes):
            try await writer.write(ByteBuffer(bytes: bytes))
        case let .file(path, range):
            let handle = try Self.open(path, at: UInt64(range.lowerBound))
            defer { try? handle.close() }
            var remaining = range.upperBound - range.lowerBound + 1
            while remaining > 0 {
                let data = try Self.read(handle, Int(min(remaining, Int64(Self.chunk))))
                try await writer.write(ByteBuffer(bytes: data))
                remaining -= Int64(data.count)
            }
        case let .aes128(path, cipher, iv, range):
            // CBC decrypts from any block given the cipher block before it: start at the block holding the range.
            let firstBlock = range.lowerBound / 16 * 16
            let handle = try Self.open(path, at: UInt64(max(firstBlock - 16, 0)))
            defer { try? handle.close() }
            var chain = firstBlock == 0 ? iv : Array(try Self.read(handle, 16))
            var position = firstBlock  // clear offset of the next block read
            while position <= range.upperBound {
                let wanted = min(Int64(Self.chunk), (range.upperBound / 16 + 1) * 16 - position)
                let blocks = Array(try Self.read(handle, Int(wanted)))
                guard blocks.count % 16 == 0 else { throw PlaybackError.invalidContent("\(path): not whole AES blocks") }
                let clear = try cipher.decryptBlocks(blocks, iv: chain)
                chain = Array(blocks.suffix(16))
                let from = Int(max(range.lowerBound - position, 0))
                let to = Int(min(range.upperBound - position + 1, Int64(clear.count)))
                if from < to { try await writer.write(ByteBuffer(bytes: clear[from..<to])) }
                position += Int64(blocks.count)
            }
        }
    }

    private static func open(_ path: String, at offset: UInt64) throws -> FileHandle {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw PlaybackError.notFound }
        try handle.seek(toOffset: offset)
        return handle
    }

    /// Exactly `count` bytes (a file that shrank while served is an error, never a short answer).
    private static func read(_ handle: FileHandle, _ count: Int) throws -> Data {
        let data = try handle.read(upToCount: count) ?? Data()
        guard data.count == count else { throw PlaybackError.storage("the file shrank while it was served") }
        return data
    }
}
