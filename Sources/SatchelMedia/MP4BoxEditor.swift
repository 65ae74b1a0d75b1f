import SatchelBytes

/// What ``MP4BoxEditor`` does with one box.
public enum MP4BoxEdit: Sendable {
    /// Copy the box as it is.
    case keep
    /// Leave the box out.
    case drop
    /// Rewrite the box's children: the first `skip` payload bytes are copied as they are (a full box's version
    /// and flags, a sample entry's fixed fields), then each child is edited in turn; `type` renames the box.
    case descend(skip: Int, type: FourCC?)
    /// Put these payload bytes in place of the box's payload (the header is rewritten with the new size).
    case payload([UInt8])
}

/// Rewrites a tree of ISO BMFF boxes: every box is kept, dropped, renamed, given a new payload or descended
/// into, and every size on the way up is recomputed. A box keeps its header form (a 64-bit size stays 64-bit,
/// a 'uuid' keeps its extended type), so the bytes removed are exactly those of the boxes dropped and of the
/// payloads shortened.
public enum MP4BoxEditor {
    /// Boxes nest at most this deep.
    public static let maximumDepth = 16

    /// The boxes filling `range` of `bytes`, edited. `edit` sees each box and the types of its ancestors.
    public static func rewrite(_ bytes: [UInt8], in range: Range<Int>? = nil,
                               edit: (MP4Box, [FourCC]) throws(MediaError) -> MP4BoxEdit) throws(MediaError) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        try write(bytes, range ?? 0..<bytes.count, path: [], into: &out, edit: edit)
        return out
    }

    private static func write(_ bytes: [UInt8], _ range: Range<Int>, path: [FourCC], into out: inout [UInt8],
                              edit: (MP4Box, [FourCC]) throws(MediaError) -> MP4BoxEdit) throws(MediaError) {
        guard path.count < maximumDepth else { throw .malformed("boxes nest deeper than \(maximumDepth)") }
        for box in try MP4Box.children(of: bytes, in: range) {
            switch try edit(box, path) {
            case .keep:
                out += bytes[box.offset..<(box.offset + box.size)]
            case .drop:
                continue
            case let .payload(payload):
                let start = header(box, type: box.type, into: &out)
                out += payload
                try patchSize(&out, at: start, of: box)
            case let .descend(skip, type):
                guard skip >= 0, skip <= box.payload.count else { throw .truncated("box '\(box.type)' at offset \(box.offset)") }
                let start = header(box, type: type ?? box.type, into: &out)
                out += bytes[box.payload.lowerBound..<(box.payload.lowerBound + skip)]
                try write(bytes, (box.payload.lowerBound + skip)..<box.payload.upperBound, path: path + [box.type], into: &out, edit: edit)
                try patchSize(&out, at: start, of: box)
            }
        }
    }

    /// True when the box's size is written in 64 bits.
    private static func isLarge(_ box: MP4Box) -> Bool { box.headerSize - (box.userType == nil ? 0 : 16) == 16 }

    /// Writes the box's header with a placeholder size; answers where it starts.
    private static func header(_ box: MP4Box, type: FourCC, into out: inout [UInt8]) -> Int {
        let start = out.count
        out += isLarge(box) ? [0, 0, 0, 1] : [0, 0, 0, 0]
        out += type.bytes
        if isLarge(box) { out += [UInt8](repeating: 0, count: 8) }
        if let userType = box.userType { out += userType }
        return start
    }

    private static func patchSize(_ out: inout [UInt8], at start: Int, of box: MP4Box) throws(MediaError) {
        let size = out.count - start
        if isLarge(box) {
            for index in 0..<8 { out[start + 8 + index] = UInt8(truncatingIfNeeded: UInt64(size) >> (56 - 8 * index)) }
            return
        }
        guard size <= Int(UInt32.max) else { throw .malformed("box '\(box.type)' grows past 4 GiB") }
        for index in 0..<4 { out[start + index] = UInt8(truncatingIfNeeded: UInt32(size) >> (24 - 8 * index)) }
    }
}
