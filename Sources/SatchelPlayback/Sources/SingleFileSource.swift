import Hummingbird
import NIOCore
import SatchelBytes
import SatchelHTTP
import SatchelMedia
import SatchelProtection

/// What a session knows of a single media file when it opens: its head and what making it clear takes.
struct SingleFile: Sendable {
    /// The file's bytes up to the end of its `moov`.
    let head: MP4FileHead
    /// Its protected tracks, by track ID (empty: clear).
    let tracks: [UInt32: FMP4Decryptor]
    /// The video tracks left out: all but the one of the highest rate (an `.ismv` with several plays
    /// the highest bit rate only).
    let dropping: Set<UInt32>
    /// The stored file's size.
    let size: Int64
}

/// A single media file played as one byte stream with `Range` (the byte streams), made clear
/// as it is sent: its head without the protection and the tracks left out, then its fragments — each `moof`
/// rewritten, the samples decrypted where they are read — so a byte range of the clear file is served from the
/// stored bytes it comes from, on disk or from the origin.
struct SingleFileSource: SegmentSource {
    let path: String

    func answer(_ request: SourceRequest) async throws(PlaybackError) -> SegmentAnswer {
        let files = request.files
        if let reader = files.session.protectedFile {
            let size = Int64(reader.header.plainSize)
            let head = size == 0 ? SegmentHead(reader.header.contentType, size: 0)
                : try SegmentHead(reader.header.contentType, size: size, rangeHeader: request.range)
            return SegmentAnswer(head) { head.body(.protectedFile) { ProtectedFileBody(reader: reader, range: $0) } }
        }
        let stream = try await files.session.fileStreams.value(for: path) { () async throws(PlaybackError) -> SingleFileStream in
            try await SingleFileStream.make(path, files)
        }
        let contentType = ContentTypes.type(of: path)
        let head = stream.size == 0 ? SegmentHead(contentType, size: 0) : try SegmentHead(contentType, size: stream.size, rangeHeader: request.range)
        return SegmentAnswer(head) { head.body(.commonEncryption) { SingleFileBody(stream: stream, range: $0) } }
    }
}

/// `range` of a single media file's clear form, made from its stored bytes (disk or origin) as it is sent.
struct SingleFileBody: SegmentBody {
    let stream: SingleFileStream
    let range: ClosedRange<Int64>
    var transform: SegmentTransform { .commonEncryption }

    func write(to writer: inout any ResponseBodyWriter, on channel: (any Channel)?) async throws {
        try await stream.write(range, to: &writer)
    }
}

/// `range` of a protected file's plain bytes, the chunks it touches opened one after the other.
struct ProtectedFileBody: SegmentBody {
    let reader: ProtectedFileReader
    let range: ClosedRange<Int64>
    var transform: SegmentTransform { .protectedFile }

    func write(to writer: inout any ResponseBodyWriter, on channel: (any Channel)?) async throws {
        let wanted = UInt64(range.lowerBound)..<UInt64(range.upperBound + 1)
        guard let chunks = reader.chunks(for: wanted) else { return }
        for index in chunks {
            let plain = try await reader.chunk(index)
            let start = index * UInt64(reader.header.chunkSize)
            let from = Int(max(wanted.lowerBound, start) - start), to = Int(min(wanted.upperBound, start + UInt64(plain.count)) - start)
            try await writer.write(ByteBuffer(bytes: plain[from..<to]))
        }
    }
}

/// A session's file read through its reader (disk or origin) as a protected file's byte source.
struct SessionByteSource: ProtectedByteSource {
    let total: UInt64
    let read: @Sendable (Int64, Int) async throws(PlaybackError) -> [UInt8]

    init(size: UInt64, read: @escaping @Sendable (Int64, Int) async throws(PlaybackError) -> [UInt8]) {
        total = size
        self.read = read
    }

    func size() async throws -> UInt64 { total }

    func read(offset: UInt64, count: Int) async throws -> [UInt8] {
        guard offset < total, count > 0 else { return [] }
        return try await read(Int64(offset), Int(min(UInt64(count), total - offset)))
    }
}

/// A single file's clear form: its clear head, the plan of its fragments, and how to read the stored bytes.
struct SingleFileStream: Sendable {
    let head: [UInt8]
    /// Where the fragments start in the stored file.
    let start: Int64
    let plan: FMP4ClearPlan
    let decryption: any FragmentDecryption
    let read: @Sendable (Int64, Int) async throws(PlaybackError) -> [UInt8]
    let name: String

    /// The clear file's size.
    var size: Int64 { Int64(head.count) + plan.size }

    /// The stream of `path` of the session of `files`: the plan reads every box header and `moof` once.
    static func make(_ path: String, _ files: SessionFiles) async throws(PlaybackError) -> SingleFileStream {
        guard let single = files.session.singleFile else { throw .notFound }
        let read = try files.reader(path)
        let kept = single.tracks.filter { !single.dropping.contains($0.key) }
        var keys: [UInt32: SecretBytes] = [:]
        for (track, decryptor) in kept {
            keys[track] = try files.reportingInvalid(path, marksWell: false) { () throws(PlaybackError) -> SecretBytes in
                try SessionFiles.key(files.session.keys, of: decryptor)
            }
        }
        let stream = try await files.reportingInvalid(path) { () async throws(PlaybackError) -> SingleFileStream in
            do throws(ProtectionError) {
                let decryption = try FMP4FileDecryptor(tracks: kept, keys: keys)
                let clearHead = try FMP4Decryptor.clearInitSegment(single.head.bytes, dropping: single.dropping)
                let start = Int64(single.head.bytes.count)
                let walk = try await BoxWalk.collect(size: single.size, from: start) { (offset, count) async throws(ProtectionError) -> [UInt8] in
                    do throws(PlaybackError) { return try await read(offset, count) } catch {
                        throw .malformed("the file cannot be read: \(error.description)")
                    }
                }
                let plan = try FMP4ClearPlan(size: single.size, decryptor: decryption, from: start, removedBefore: Int(start) - clearHead.count,
                                             dropping: single.dropping, read: walk.bytes)
                return SingleFileStream(head: clearHead, start: start, plan: plan, decryption: decryption, read: read, name: path)
            } catch {
                throw .invalidContent("\(path) cannot be made clear: \(error)")
            }
        }
        try ClearOutput.check(stream.head, of: path)
        for case let .made(bytes) in stream.plan.parts { try ClearOutput.check(bytes, of: path) }
        return stream
    }

    /// Writes the clear bytes `range`: each part of the clear file that overlaps it, read and decrypted as needed.
    func write(_ range: ClosedRange<Int64>, to writer: inout any ResponseBodyWriter) async throws {
        var position: Int64 = 0  // the clear offset of the part at hand
        let parts: [FMP4ClearPlan.Part] = [.made(head)] + plan.parts
        for part in parts {
            guard position <= range.upperBound else { break }
            let length: Int64
            switch part {
            case let .made(bytes): length = Int64(bytes.count)
            case let .stored(stored), let .decrypted(stored, _): length = stored.upperBound - stored.lowerBound
            }
            defer { position += length }
            let from = max(range.lowerBound, position), to = min(range.upperBound, position + length - 1)
            guard from <= to else { continue }
            switch part {
            case let .made(bytes):
                try await writer.write(ByteBuffer(bytes: bytes[Int(from - position)...Int(to - position)]))
            case let .stored(stored):
                var offset = stored.lowerBound + (from - position)
                let end = stored.lowerBound + (to - position) + 1
                while offset < end {
                    let count = Int(min(end - offset, Int64(Clearing.chunk)))
                    try await writer.write(ByteBuffer(bytes: try await read(offset, count)))
                    offset += Int64(count)
                }
            case let .decrypted(stored, samples):
                var bytes = try await read(stored.lowerBound, Int(length))
                do throws(ProtectionError) {
                    try RequestTiming.timed(.decryption) { () throws(ProtectionError) in try decryption.decrypt(samples, in: &bytes, at: stored.lowerBound) }
                } catch {
                    throw PlaybackError.invalidContent("\(name) does not decrypt: \(error)")
                }
                try await writer.write(ByteBuffer(bytes: bytes[Int(from - position)...Int(to - position)]))
            }
        }
    }
}

/// The box headers and `moof`s of a file's fragments, read once (from disk or the origin) for the plan that makes
/// them clear.
struct BoxWalk: Sendable {
    /// What was read, by offset: each box's first bytes, each `moof` whole.
    private var read: [Int64: [UInt8]] = [:]

    /// Reads the boxes of the file of `size` bytes from `start` (at most ``FMP4ClearPlan/boxLimit``).
    static func collect(size: Int64, from start: Int64,
                        _ fetch: (Int64, Int) async throws(ProtectionError) -> [UInt8]) async throws(ProtectionError) -> BoxWalk {
        var walk = BoxWalk()
        var offset = start
        var count = 0
        while offset < size {
            count += 1
            guard count <= FMP4ClearPlan.boxLimit else { throw .malformed("more than \(FMP4ClearPlan.boxLimit) boxes in the file") }
            guard size - offset >= 8 else { throw .malformed("a box header is cut short at the end of the file") }
            let header = try await fetch(offset, Int(min(16, size - offset)))
            var reader = ByteReader(header)
            let boxSize: Int64
            do {
                let small = try reader.readUInt32()
                let type = FourCC(rawValue: try reader.readUInt32())
                boxSize = small == 1 ? Int64(clamping: try reader.readUInt64()) : small == 0 ? size - offset : Int64(small)
                guard boxSize >= 8, boxSize <= size - offset else { throw ProtectionError.malformed("box '\(type)' of \(boxSize) bytes") }
                if type == "moof" {
                    guard boxSize <= Int64(FMP4ClearPlan.moofLimit) else { throw ProtectionError.malformed("a 'moof' of \(boxSize) bytes") }
                    walk.read[offset] = try await fetch(offset, Int(boxSize))
                } else {
                    walk.read[offset] = header
                }
            } catch let error as ProtectionError {
                throw error
            } catch {
                throw .malformed("a box header is cut short")
            }
            offset += boxSize
        }
        return walk
    }

    /// `count` bytes at `offset`, from what was read.
    func bytes(_ offset: Int64, _ count: Int) throws(ProtectionError) -> [UInt8] {
        guard let bytes = read[offset], count <= bytes.count else { throw .malformed("the file changed while it was read") }
        return Array(bytes.prefix(count))
    }
}
