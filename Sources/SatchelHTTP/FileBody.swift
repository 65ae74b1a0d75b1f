import Hummingbird
import NIOCore
import SatchelSystem

/// The one way Satchel's servers send a stored file (the origin's `/content/`, the playback proxy): a file opened
/// once without following links (``ConfinedFile``), a stretch of it sent with `sendfile(2)` where the connection
/// can take it (``FileSend``), else read a chunk at a time straight into the buffers sent.
public enum FileBody {
    /// Bytes read at a time when the file is not sent with `sendfile`.
    public static let chunk = 256 << 10

    /// Writes bytes `range` of `file` to `writer` (a player that goes away ends it: the write throws).
    public static func write(_ file: ConfinedFile, range: ClosedRange<Int64>, to writer: inout any ResponseBodyWriter,
                             on channel: (any Channel)?) async throws {
        if let channel, try await FileSend.send(file.descriptor, range: range.lowerBound..<(range.upperBound + 1), on: channel, to: &writer) {
            return
        }
        var offset = range.lowerBound
        while offset <= range.upperBound {
            let buffer = try file.buffer(Int(min(range.upperBound - offset + 1, Int64(chunk))), at: offset)
            try await writer.write(buffer)
            offset += Int64(buffer.readableBytes)
        }
    }
}

extension ConfinedFile {
    /// Exactly `count` bytes at `offset`, read straight into a new buffer (a file that shrank or failed while it
    /// was read is an error, never a short buffer).
    public func buffer(_ count: Int, at offset: Int64) throws(ConfinedFile.Failure) -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: count)
        var failure: ConfinedFile.Failure?
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { pointer in
            do throws(ConfinedFile.Failure) { try read(into: UnsafeMutableRawBufferPointer(rebasing: pointer[..<count]), at: offset) } catch {
                failure = error
                return 0
            }
            return count
        }
        if let failure { throw failure }
        return buffer
    }
}
