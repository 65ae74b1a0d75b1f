import SatchelBytes
import SatchelMedia

/// Whether an MP4 file's tracks are encrypted, wherever its `moov` is (before its media, or after it as a progressive
/// file writes it): what lets a player never be handed ciphertext as if it were media. Read by box headers: a file of
/// any size costs a few small reads and its `moov`.
public enum MP4ProtectionScan {
    /// The encrypted sample entries (`encv`, `enca`, `enct`, `encs`) of the file of `size` bytes that `read` reads, each
    /// with its scheme (`cenc`, `cbcs`, …; `?` when its `schm` cannot be read); empty when the file is clear or is
    /// not an MP4 file.
    public static func protectedEntries(size: Int64, _ read: (Int64, Int) async throws(ProtectionError) -> [UInt8]) async throws(ProtectionError) -> [String] {
        var offset: Int64 = 0
        for _ in 0..<MP4FileHead.boxLimit {
            guard size - offset >= 8 else { return [] }
            let header = try await read(offset, Int(min(16, size - offset)))
            guard let (type, boxSize) = try? MP4FileHead.header(header, left: size - offset) else { return [] }
            if type == "moov" {
                guard boxSize <= Int64(MP4FileHead.moovLimit) else { throw .malformed("a 'moov' of \(boxSize) bytes") }
                return entries(inMovie: try await read(offset, Int(boxSize)))
            }
            offset += boxSize
        }
        return []
    }

    /// The encrypted sample entries of the `moov` box `bytes`, as `entry/scheme`.
    static func entries(inMovie bytes: [UInt8]) -> [String] {
        guard let moov = try? MP4Box.children(of: bytes, in: 0..<bytes.count).first(where: { $0.type == "moov" }) else { return [] }
        var found: [String] = []
        for trak in (try? MP4Box.children(of: bytes, in: moov.payload)) ?? [] where trak.type == "trak" {
            guard let stsd = box(at: ["mdia", "minf", "stbl", "stsd"], in: trak, of: bytes), stsd.payload.count >= 8 else { continue }
            let entries = (stsd.payload.lowerBound + 8)..<stsd.payload.upperBound
            for entry in (try? MP4Box.children(of: bytes, in: entries)) ?? [] where ["encv", "enca", "enct", "encs"].contains(entry.type) {
                found.append("\(entry.type)/\(scheme(of: entry, in: bytes) ?? "?")")
            }
        }
        return found
    }

    /// The box at `path` below `parent`.
    private static func box(at path: [FourCC], in parent: MP4Box, of bytes: [UInt8]) -> MP4Box? {
        var current = parent
        for type in path {
            guard let next = (try? MP4Box.children(of: bytes, in: current.payload))?.first(where: { $0.type == type }) else { return nil }
            current = next
        }
        return current
    }

    /// The scheme a sample entry's `sinf/schm` names: found by its type inside the entry (the entry's own fields come
    /// first, and their length depends on the kind of entry).
    private static func scheme(of entry: MP4Box, in bytes: [UInt8]) -> String? {
        let marker = Array("schm".utf8)
        var index = entry.payload.lowerBound
        while index + 16 <= entry.payload.upperBound {
            if Array(bytes[index..<(index + 4)]) == marker {
                return String(decoding: bytes[(index + 8)..<(index + 12)], as: UTF8.self)  // after version/flags: the scheme type
            }
            index += 1
        }
        return nil
    }
}
