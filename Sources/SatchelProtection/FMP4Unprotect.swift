import SatchelBytes
import SatchelMedia

/// Clear fMP4 from CENC fMP4, for players without DRM: the init segment loses its 'sinf' and 'pssh' boxes
/// and its sample entries take back their original format ('encv' → 'avc1'); media segments are decrypted
/// and lose 'senc', 'saiz', 'saio', PIFF's sample encryption box and the 'seig' sample groups, with the
/// sample data offsets moved by the bytes removed.
enum FMP4Unprotect {
    /// PIFF's sample encryption 'uuid' box.
    static let piffSampleEncryption: [UInt8] = [0xA2, 0x39, 0x4F, 0x52, 0x5A, 0x9B, 0x4F, 0x14, 0xA2, 0x44, 0x6C, 0x42, 0x7C, 0x64, 0x8D, 0xF4]

    /// The init segment without its protection.
    static func clearInitSegment(_ bytes: [UInt8], dropping: Set<UInt32> = []) throws(ProtectionError) -> [UInt8] {
        do {
            return try MP4BoxEditor.rewrite(bytes) { (box, path) throws(MediaError) -> MP4BoxEdit in
                switch (box.type, path.last) {
                case ("trak", "moov") where !dropping.isEmpty:
                    let id: UInt32
                    do { id = try FMP4Decryptor.trackID(of: box, bytes) } catch { throw .malformed("a 'trak' without its track ID") }
                    return dropping.contains(id) ? .drop : .descend(skip: 0, type: nil)
                case ("mvex", "moov") where !dropping.isEmpty:
                    return .descend(skip: 0, type: nil)
                case ("trex", "mvex"):
                    var (_, _, reader) = try box.fullBoxReader(in: bytes)
                    let id: UInt32
                    do { id = try reader.readUInt32() } catch { throw .truncated("'trex'") }
                    return dropping.contains(id) ? .drop : .keep
                case ("moov", nil), ("trak", "moov"), ("mdia", "trak"), ("minf", "mdia"), ("stbl", "minf"):
                    return .descend(skip: 0, type: nil)
                case ("stsd", "stbl"):
                    return .descend(skip: 8, type: nil)
                case ("pssh", "moov"):
                    return .drop
                case ("encv", "stsd"), ("enca", "stsd"):
                    let skip = box.type == "encv" ? 78 : 28
                    guard let sinf = try box.children(in: bytes, skip: skip).first("sinf"),
                          let frma = try sinf.children(in: bytes).first("frma"), frma.payload.count >= 4 else {
                        throw .malformed("'\(box.type)' without 'sinf'/'frma'")
                    }
                    var reader = frma.reader(in: bytes)
                    let original: FourCC
                    do { original = FourCC(rawValue: try reader.readUInt32()) } catch { throw .truncated("'frma'") }
                    return .descend(skip: skip, type: original)
                case ("sinf", "encv"), ("sinf", "enca"):
                    return .drop
                case ("senc", "stbl"), ("saiz", "stbl"), ("saio", "stbl"):
                    // The sample table's encryption information (ffmpeg writes it in a fragmented file's moov too,
                    // describing no sample): the clear file has none.
                    return .drop
                default:
                    return .keep
                }
            }
        } catch {
            throw .malformed("init segment: \(error)")
        }
    }

    /// `moof` (a box of `bytes`) without its protection boxes, its sample data offsets moved back by the bytes
    /// removed from it and, for explicit base offsets, by `removedBefore` (bytes removed from earlier fragments).
    /// The `traf`s of the tracks in `dropping` go too (a file's video tracks other than the one played).
    static func clearMoof(_ moof: MP4Box, in bytes: [UInt8], removedBefore: Int, dropping: Set<UInt32> = []) throws(MediaError) -> [UInt8] {
        let removed = try protectionBytes(in: moof, bytes, dropping: dropping)
        return try MP4BoxEditor.rewrite(bytes, in: moof.offset..<(moof.offset + moof.size)) { (box, path) throws(MediaError) -> MP4BoxEdit in
            if try isProtectionBox(box, path, bytes) { return .drop }
            switch (box.type, path.last) {
            case ("traf", "moof"): return try dropping.contains(trackID(ofTraf: box, bytes)) ? .drop : .descend(skip: 0, type: nil)
            case ("moof", nil): return .descend(skip: 0, type: nil)
            case ("tfhd", "traf"): return try movingBaseOffset(box, bytes, by: removedBefore + removed)
            case ("trun", "traf"): return try movingDataOffset(box, bytes, by: removed)
            default: return .keep
            }
        }
    }

    /// True for the boxes a clear fragment does without.
    static func isProtectionBox(_ box: MP4Box, _ path: [FourCC], _ bytes: [UInt8]) throws(MediaError) -> Bool {
        switch (box.type, path.last) {
        case ("pssh", "moof"), ("senc", "traf"), ("saiz", "traf"), ("saio", "traf"): return true
        case ("uuid", "traf"): return box.userType == piffSampleEncryption
        case ("sbgp", "traf"), ("sgpd", "traf"):
            var (_, _, reader) = try box.fullBoxReader(in: bytes)
            do { return FourCC(rawValue: try reader.readUInt32()) == "seig" } catch { throw .truncated("'\(box.type)'") }
        default: return false
        }
    }

    /// The bytes of the protection boxes inside one 'moof', and of the `traf`s of the tracks in `dropping`.
    static func protectionBytes(in moof: MP4Box, _ bytes: [UInt8], dropping: Set<UInt32> = []) throws(MediaError) -> Int {
        var total = 0
        for child in try moof.children(in: bytes) {
            if try isProtectionBox(child, ["moof"], bytes) { total += child.size }
            guard child.type == "traf" else { continue }
            if !dropping.isEmpty, dropping.contains(try trackID(ofTraf: child, bytes)) {
                total += child.size
                continue
            }
            for box in try child.children(in: bytes) where try isProtectionBox(box, ["moof", "traf"], bytes) { total += box.size }
        }
        return total
    }

    /// The track ID a `traf`'s `tfhd` names.
    static func trackID(ofTraf traf: MP4Box, _ bytes: [UInt8]) throws(MediaError) -> UInt32 {
        guard let tfhd = try traf.children(in: bytes).first("tfhd") else { throw .malformed("a 'traf' without 'tfhd'") }
        var (_, _, reader) = try tfhd.fullBoxReader(in: bytes)
        do { return try reader.readUInt32() } catch { throw .truncated("'tfhd'") }
    }

    /// A 'trun' whose data offset (relative to the 'moof') moves back by `removed` bytes.
    static func movingDataOffset(_ trun: MP4Box, _ bytes: [UInt8], by removed: Int) throws(MediaError) -> MP4BoxEdit {
        let (_, flags, _) = try trun.fullBoxReader(in: bytes)
        guard flags & 0x1 != 0, removed > 0 else { return .keep }
        var payload = Array(bytes[trun.payload])
        guard payload.count >= 12 else { throw .truncated("'trun'") }
        let old = Int(Int32(bitPattern: UInt32(payload[8]) << 24 | UInt32(payload[9]) << 16 | UInt32(payload[10]) << 8 | UInt32(payload[11])))
        guard let moved = Int32(exactly: old - removed) else { throw .malformed("'trun' data offset \(old) cannot move by \(removed)") }
        let word = UInt32(bitPattern: moved)
        for index in 0..<4 { payload[8 + index] = UInt8(truncatingIfNeeded: word >> (24 - 8 * index)) }
        return .payload(payload)
    }

    /// A 'tfhd' whose explicit base data offset (from the file's start) moves back by `removed` bytes.
    static func movingBaseOffset(_ tfhd: MP4Box, _ bytes: [UInt8], by removed: Int) throws(MediaError) -> MP4BoxEdit {
        let (_, flags, _) = try tfhd.fullBoxReader(in: bytes)
        guard flags & 0x1 != 0, removed > 0 else { return .keep }
        var payload = Array(bytes[tfhd.payload])
        guard payload.count >= 16 else { throw .truncated("'tfhd'") }
        var old: UInt64 = 0
        for index in 8..<16 { old = old << 8 | UInt64(payload[index]) }
        guard old >= UInt64(removed) else { throw .malformed("'tfhd' base data offset \(old) cannot move by \(removed)") }
        let moved = old - UInt64(removed)
        for index in 0..<8 { payload[8 + index] = UInt8(truncatingIfNeeded: moved >> (56 - 8 * index)) }
        return .payload(payload)
    }
}

extension FMP4Decryptor {
    /// The init segment without its protection: `sinf` and `pssh` gone, the sample entries their original format
    /// again, and the tracks in `dropping` left out.
    public static func clearInitSegment(_ bytes: [UInt8], dropping: Set<UInt32> = []) throws(ProtectionError) -> [UInt8] {
        try FMP4Unprotect.clearInitSegment(bytes, dropping: dropping)
    }

    /// A media segment decrypted with `key`, without its protection boxes.
    public func clearSegment(_ segment: [UInt8], key: SecretBytes) throws(ProtectionError) -> [UInt8] {
        let plan = try FMP4ClearPlan(size: Int64(segment.count), decryptor: self) { (offset, count) throws(ProtectionError) -> [UInt8] in
            Array(segment[Int(offset)..<(Int(offset) + count)])
        }
        let cipher = try cipher(key)
        var out: [UInt8] = []
        out.reserveCapacity(Int(plan.size))
        for part in plan.parts {
            switch part {
            case let .made(bytes):
                out += bytes
            case let .stored(range):
                out += segment[Int(range.lowerBound)..<Int(range.upperBound)]
            case let .decrypted(range, samples):
                var stretch = Array(segment[Int(range.lowerBound)..<Int(range.upperBound)])
                try BlockCipher.inPlace(&stretch) { (buffer) throws(ProtectionError) in
                    try decrypt(samples, in: buffer, at: range.lowerBound, cipher: cipher)
                }
                out += stretch
            }
        }
        return out
    }
}
