import SatchelBytes

/// One ISO BMFF box located in a byte array: its type and where its payload lies.
///
/// Boxes are not copied: ``payload`` is a range into the array the box was read from.
public struct MP4Box: Sendable {
    /// The box type.
    public let type: FourCC
    /// Offset of the box header in the underlying bytes.
    public let offset: Int
    /// The whole box size, header included.
    public let size: Int
    /// Size of the header (8, 16 with a 64-bit size, plus 16 for 'uuid').
    public let headerSize: Int
    /// The extended type of a 'uuid' box.
    public let userType: [UInt8]?

    /// The payload's range in the underlying bytes.
    public var payload: Range<Int> { (offset + headerSize)..<(offset + size) }

    /// Container boxes whose payload is a list of boxes.
    public static let containers: Set<FourCC> = ["moov", "trak", "mdia", "minf", "stbl", "dinf", "edts", "mvex", "moof", "traf", "mfra", "sinf", "schi", "udta"]

    /// Reads the boxes that fill `range` of `bytes`, in order.
    ///
    /// A box whose size runs past the range, or a size smaller than its header, is an error;
    /// size 0 means "to the end of the range", as ISO/IEC 14496-12 allows.
    public static func children(of bytes: [UInt8], in range: Range<Int>) throws(MediaError) -> [MP4Box] {
        var boxes: [MP4Box] = []
        var start = range.lowerBound
        while range.upperBound - start >= 8 {
            let box = try header(of: bytes, at: start, end: range.upperBound)
            boxes.append(box)
            start += box.size
        }
        return boxes
    }

    /// The box whose header starts at `start` of `bytes`, which must end by `end` (the end of its container, or of
    /// the file; `bytes` need hold only the header: a file's top-level boxes are read this way). A size that does
    /// not fit, or is smaller than the header, is an error; size 0 means "to `end`".
    public static func header(of bytes: [UInt8], at start: Int, end: Int) throws(MediaError) -> MP4Box {
        var reader = ByteReader(bytes, range: start..<max(start, min(end, bytes.count)))
        do {
            var size = Int(try reader.readUInt32())
            let type = FourCC(rawValue: try reader.readUInt32())
            var header = 8
            if size == 1 {
                let large = try reader.readUInt64()
                guard large <= UInt64(Int.max) else { throw MediaError.malformed("box '\(type)' at \(start) has an impossible size") }
                size = Int(large)
                header = 16
            } else if size == 0 {
                size = end - start
            }
            var userType: [UInt8]?
            if type == "uuid" {
                userType = try reader.readBytes(16)
                header += 16
            }
            guard size >= header, size <= end - start else {
                throw MediaError.malformed("box '\(type)' at offset \(start) has size \(size), which does not fit")
            }
            return MP4Box(type: type, offset: start, size: size, headerSize: header, userType: userType)
        } catch let error as MediaError {
            throw error
        } catch {
            throw .truncated("box header at offset \(start)")
        }
    }

    /// The children of this box (for container boxes); `skip` bytes of the payload come first
    /// (e.g. 8 for 'stsd' and version/flags, or a sample entry's fixed fields).
    public func children(in bytes: [UInt8], skip: Int = 0) throws(MediaError) -> [MP4Box] {
        guard skip <= payload.count else { throw .truncated("box '\(type)' at offset \(offset)") }
        return try Self.children(of: bytes, in: (payload.lowerBound + skip)..<payload.upperBound)
    }

    /// A reader over the payload.
    public func reader(in bytes: [UInt8]) -> ByteReader { ByteReader(bytes, range: payload) }

    /// A reader over the payload of a full box, positioned after version and flags.
    public func fullBoxReader(in bytes: [UInt8]) throws(MediaError) -> (version: UInt8, flags: UInt32, reader: ByteReader) {
        var reader = self.reader(in: bytes)
        do {
            let word = try reader.readUInt32()
            return (UInt8(word >> 24), word & 0x00ff_ffff, reader)
        } catch {
            throw .truncated("full box '\(type)' at offset \(offset)")
        }
    }
}

extension Array where Element == MP4Box {
    /// The first box of `type`.
    public func first(_ type: FourCC) -> MP4Box? { first { $0.type == type } }

    /// The first box of `type`, or an error naming what is missing.
    public func required(_ type: FourCC, in parent: String) throws(MediaError) -> MP4Box {
        guard let box = first(type) else { throw .malformed("'\(parent)' has no '\(type)' box") }
        return box
    }

    /// Every box of `type`.
    public func all(_ type: FourCC) -> [MP4Box] { filter { $0.type == type } }
}
