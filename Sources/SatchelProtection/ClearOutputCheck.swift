import SatchelMedia

/// The last look at fMP4 bytes a transform made clear, before a player gets them as media: whatever the transform
/// did, what still carries protection — a protected sample entry (`encv`, `enca`, …) or its `sinf`, a fragment's
/// `senc` or PIFF's sample encryption box — is named, so the caller refuses it rather than hand a player ciphertext.
/// Only the box structure is read (never the media): bytes that do not parse as boxes name nothing.
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
