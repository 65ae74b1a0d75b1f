import SatchelBytes
import SatchelMedia

/// The head of an MP4 file played as one byte stream (a single-file download, a PIFF `.ismv`): its boxes up to the
/// end of its `moov`, whether its media comes in fragments, and its video tracks with their bit rates. Read by box
/// headers, so a file of any size costs a few small reads.
public struct MP4FileHead: Sendable {
    /// The file's bytes up to the end of its `moov` (`ftyp` … `moov`).
    public let bytes: [UInt8]
    /// True when the media comes in fragments (`moov` has `mvex`): only such a file can be made clear as it streams.
    public let isFragmented: Bool
    /// The video tracks, by track ID, with their bit rate (`btrt`'s average, else their picture size as a stand-in).
    public let videoTracks: [(id: UInt32, rate: UInt64)]

    /// At most this many top-level boxes before the `moov`.
    public static let boxLimit = 64
    /// The largest `moov` read.
    public static let moovLimit = 64 << 20

    /// The head of the file of `size` bytes that `read(offset, count)` reads, or nil when its `moov` does not come
    /// before its media (a progressive file not made for streaming: served as it is stored).
    public static func read(size: Int64, _ read: (Int64, Int) async throws(ProtectionError) -> [UInt8]) async throws(ProtectionError) -> MP4FileHead? {
        var offset: Int64 = 0
        for _ in 0..<boxLimit {
            guard size - offset >= 8 else { return nil }
            let header = try await read(offset, Int(min(16, size - offset)))
            let (type, boxSize) = try Self.header(header, left: size - offset)
            if type == "mdat" || type == "moof" { return nil }
            if type == "moov" {
                guard boxSize <= Int64(moovLimit) else { throw .malformed("a 'moov' of \(boxSize) bytes") }
                let head = (offset > 0 ? try await read(0, Int(offset)) : []) + (try await read(offset, Int(boxSize)))
                return try MP4FileHead(head)
            }
            offset += boxSize
        }
        return nil
    }

    /// The head in `bytes` (ending with the `moov`).
    init(_ bytes: [UInt8]) throws(ProtectionError) {
        self.bytes = bytes
        do {
            guard let moov = try MP4Box.children(of: bytes, in: 0..<bytes.count).first("moov") else { throw ProtectionError.malformed("no 'moov'") }
            let children = try moov.children(in: bytes)
            isFragmented = children.first("mvex") != nil
            var video: [(UInt32, UInt64)] = []
            for trak in children.all("trak") {
                guard let mdia = try trak.children(in: bytes).first("mdia"), let hdlr = try mdia.children(in: bytes).first("hdlr") else { continue }
                var (_, _, reader) = try hdlr.fullBoxReader(in: bytes)
                _ = try reader.readUInt32()  // pre_defined
                guard FourCC(rawValue: try reader.readUInt32()) == "vide" else { continue }
                video.append((try FMP4Decryptor.trackID(of: trak, bytes), try Self.rate(of: trak, mdia, bytes)))
            }
            videoTracks = video
        } catch let error as ProtectionError {
            throw error
        } catch {
            throw .malformed("the file's 'moov': \(error)")
        }
    }

    /// The video tracks a player without adaptive switching is not given: every one but the highest rate.
    public var lesserVideoTracks: Set<UInt32> {
        guard let best = videoTracks.max(by: { $0.rate < $1.rate }) else { return [] }
        return Set(videoTracks.map(\.id)).subtracting([best.id])
    }

    /// A video track's rate: its sample entry's `btrt` average bit rate, else its `tkhd` picture size.
    private static func rate(of trak: MP4Box, _ mdia: MP4Box, _ bytes: [UInt8]) throws -> UInt64 {
        if let minf = try mdia.children(in: bytes).first("minf"), let stbl = try minf.children(in: bytes).first("stbl"),
           let stsd = try stbl.children(in: bytes).first("stsd"), let entry = try stsd.children(in: bytes, skip: 8).first,
           let btrt = try entry.children(in: bytes, skip: 78).first("btrt") {
            var reader = btrt.reader(in: bytes)
            _ = try reader.readUInt32()  // buffer size
            _ = try reader.readUInt32()  // max bit rate
            return UInt64(try reader.readUInt32())
        }
        guard let tkhd = try trak.children(in: bytes).first("tkhd") else { return 0 }
        var (version, _, reader) = try tkhd.fullBoxReader(in: bytes)
        try reader.skip(version == 1 ? 84 : 72)  // times, track ID, duration, layer, volume, matrix: to width and height (16.16)
        return UInt64(try reader.readUInt32() >> 16) * UInt64(try reader.readUInt32() >> 16)
    }

    /// A box header's type and size (`left`: the bytes from it to the file's end).
    static func header(_ bytes: [UInt8], left: Int64) throws(ProtectionError) -> (FourCC, Int64) {
        var reader = ByteReader(bytes)
        do {
            let small = try reader.readUInt32()
            let type = FourCC(rawValue: try reader.readUInt32())
            switch small {
            case 0: return (type, left)
            case 1:
                let large = try reader.readUInt64()
                guard large >= 16, large <= UInt64(left) else { throw ProtectionError.malformed("box '\(type)' of \(large) bytes in \(left)") }
                return (type, Int64(large))
            default:
                guard small >= 8, Int64(small) <= left else { throw ProtectionError.malformed("box '\(type)' of \(small) bytes in \(left)") }
                return (type, Int64(small))
            }
        } catch let error as ProtectionError {
            throw error
        } catch {
            throw .malformed("a box header is cut short")
        }
    }
}
