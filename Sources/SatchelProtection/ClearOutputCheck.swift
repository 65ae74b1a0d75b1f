import SatchelMedia

/// The last look at media a transform made clear, before a player gets it: whatever the transform did, what still
/// carries protection is named, so the caller refuses it rather than hand a player ciphertext. In fMP4: a protected
/// sample entry (`encv`, `enca`, …) or its `sinf`, a fragment's `senc` or PIFF's sample encryption box. In MPEG-TS:
/// an elementary stream the program map declares encrypted (a SAMPLE-AES stream type, or the private data
/// indicator Apple's SAMPLE-AES signals it with). Only the structure is read (never the media): bytes that do not
/// parse as boxes, or hold no program map, name nothing.
public enum ClearOutputCheck {
    /// Protected sample entry types.
    static let protectedEntries: Set<FourCC> = ["encv", "enca", "enct", "encs"]

    /// The protection boxes left in `bytes` (an init segment, a file's head, fragments), by path (`moov/…/encv`);
    /// empty when there are none.
    public static func protection(inFMP4 bytes: [UInt8]) -> [String] {
        var found: [String] = []
        walk(bytes, in: 0..<bytes.count, path: "", &found)
        return found
    }

    /// SAMPLE-AES stream types: H.264, AAC (ADTS), AC-3, E-AC-3.
    static let encryptedStreamTypes: [UInt8: String] = [0xDB: "SAMPLE-AES H.264", 0xCF: "SAMPLE-AES AAC", 0xC1: "SAMPLE-AES AC-3", 0xC2: "SAMPLE-AES E-AC-3"]
    /// The formats a private data indicator descriptor (tag 0x0F) names for a SAMPLE-AES stream.
    static let encryptedFormats: Set<String> = ["zavc", "aacd", "ac3d", "ec3d"]

    /// The encrypted elementary streams the first program map in `bytes` (MPEG-TS from its first packet) declares,
    /// as `PID 256: stream type 0xDB (SAMPLE-AES H.264)`; empty when there are none or no program map.
    public static func protection(inTS bytes: [UInt8]) -> [String] {
        guard bytes.first == 0x47, let streams = try? TSDemuxer.programStreams(bytes) else { return [] }
        var found: [String] = []
        for stream in streams {
            let type = "0x" + String(stream.streamType, radix: 16, uppercase: true)
            if let name = encryptedStreamTypes[stream.streamType] {
                found.append("PID \(stream.pid): stream type \(type) (\(name))")
            } else if let format = privateDataIndicator(stream.descriptors), encryptedFormats.contains(format) {
                found.append("PID \(stream.pid): stream type \(type) marked \(format)")
            }
        }
        return found
    }

    /// The four characters of a private data indicator descriptor among `descriptors`, if there is one.
    private static func privateDataIndicator(_ descriptors: [UInt8]) -> String? {
        var index = 0
        while index + 2 <= descriptors.count {
            let (tag, length) = (descriptors[index], Int(descriptors[index + 1]))
            guard index + 2 + length <= descriptors.count else { return nil }
            if tag == 0x0F, length == 4 { return String(decoding: descriptors[(index + 2)..<(index + 6)], as: UTF8.self) }
            index += 2 + length
        }
        return nil
    }

    private static func walk(_ bytes: [UInt8], in range: Range<Int>, path: String, _ found: inout [String]) {
        guard found.count < 8, let boxes = try? MP4Box.children(of: bytes, in: range) else { return }
        for box in boxes {
            let named = path.isEmpty ? "\(box.type)" : path + "/\(box.type)"
            switch box.type {
            case "moov", "trak", "mdia", "minf", "stbl", "moof", "traf":
                walk(bytes, in: box.payload, path: named, &found)
            case "stsd":
                guard box.payload.count >= 8 else { continue }
                walk(bytes, in: (box.payload.lowerBound + 8)..<box.payload.upperBound, path: named, &found)
            case "senc", "sinf":
                found.append(named)
            case "uuid" where box.userType == FMP4Unprotect.piffSampleEncryption:
                found.append(named + " (PIFF sample encryption)")
            default:
                if protectedEntries.contains(box.type) { found.append(named) }
            }
        }
    }
}
