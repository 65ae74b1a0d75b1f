import SatchelBytes
import SatchelMedia

/// The sizes of a fragment's samples as its boxes give them: each `trun` entry's own, else the `tfhd`'s default, else
/// the init segment's `trex` (ISO/IEC 14496-12: a `trun` may leave constant sizes to them, as Shaka does for AC-3).
enum FragmentSampleSizes {
    /// The track's `trex`: its default sample entry and sample size.
    static func trackDefaults(_ moov: MP4Box, track: UInt32, _ bytes: [UInt8]) throws -> (entry: UInt32, size: UInt32?) {
        guard let mvex = try moov.children(in: bytes).first("mvex") else { return (1, nil) }
        for trex in try mvex.children(in: bytes).all("trex") {
            var (_, _, reader) = try trex.fullBoxReader(in: bytes)
            guard try reader.readUInt32() == track else { continue }
            let entry = max(try reader.readUInt32(), 1)
            _ = try reader.readUInt32()  // default_sample_duration
            return (entry, try reader.readUInt32())
        }
        return (1, nil)
    }

    /// The sample size a `traf`'s `tfhd` gives (flag 0x10), else the `trex`'s.
    static func defaultSize(of tfhd: MP4Box?, _ bytes: [UInt8], trex defaultSampleSize: UInt32?) throws -> UInt32? {
        guard let tfhd else { return defaultSampleSize }
        var (_, flags, reader) = try tfhd.fullBoxReader(in: bytes)
        _ = try reader.readUInt32()  // track_ID
        if flags & 0x01 != 0 { _ = try reader.readUInt64() }
        if flags & 0x02 != 0 { _ = try reader.readUInt32() }
        if flags & 0x08 != 0 { _ = try reader.readUInt32() }
        return flags & 0x10 != 0 ? try reader.readUInt32() : defaultSampleSize
    }

    /// The sizes of a `trun`'s samples (its own, else `defaultSize`: Shaka leaves constant-size AC-3 frames' sizes to
    /// the `tfhd`), and its data offset.
    static func sizes(_ trun: MP4Box, _ bytes: [UInt8], defaultSize: UInt32?) throws -> ([Int], Int) {
        var (_, flags, reader) = try trun.fullBoxReader(in: bytes)
        let count = Int(try reader.readUInt32())
        let offset = flags & 0x1 != 0 ? Int(Int32(bitPattern: try reader.readUInt32())) : 0
        if flags & 0x4 != 0 { _ = try reader.readUInt32() }
        let perSample = [0x100, 0x200, 0x400, 0x800].filter { flags & $0 != 0 }.count * 4
        guard flags & 0x200 != 0 || (defaultSize ?? 0) > 0 else { throw ProtectionError.malformed("'trun' without sample sizes, and no default size") }
        guard count <= (perSample > 0 ? reader.remaining / perSample : bytes.count) else { throw ProtectionError.malformed("'trun' lists more samples than it holds") }
        var sizes: [Int] = []
        for _ in 0..<count {
            if flags & 0x100 != 0 { _ = try reader.readUInt32() }
            sizes.append(Int(flags & 0x200 != 0 ? try reader.readUInt32() : defaultSize ?? 0))
            if flags & 0x400 != 0 { _ = try reader.readUInt32() }
            if flags & 0x800 != 0 { _ = try reader.readUInt32() }
        }
        return (sizes, offset)
    }
}
