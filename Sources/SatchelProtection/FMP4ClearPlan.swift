import SatchelBytes
import SatchelMedia

/// How a CENC-protected fMP4 media segment becomes a clear one, worked out from its box headers and 'moof' boxes
/// alone, so the segment can be sent fragment by fragment without being held whole: each 'moof' is rewritten
/// without its protection boxes; everything else is sent as stored, the stretches that hold samples decrypted on
/// the way (each stretch whole samples, about ``chunk`` bytes).
public struct FMP4ClearPlan: Sendable {
    /// One stretch of the clear segment, in order.
    public enum Part: Sendable, Equatable {
        /// Bytes made here: a 'moof' without its protection boxes.
        case made([UInt8])
        /// A stretch of the stored segment, sent as it is.
        case stored(Range<Int64>)
        /// A stretch of the stored segment holding whole samples: decrypt them (``FMP4Decryptor/decrypt(_:in:at:cipher:)``), then send it.
        case decrypted(Range<Int64>, [EncryptedSample])
    }

    /// The stretches, in order.
    public let parts: [Part]
    /// The clear segment's size in bytes.
    public let size: Int64

    /// At most this many top-level boxes in a segment.
    public static let boxLimit = 100_000
    /// The largest 'moof' read.
    public static let moofLimit = 16 << 20
    /// The size a decrypted stretch grows to before the next one starts (a larger sample is one stretch).
    public static let chunk: Int64 = 256 << 10

    /// The plan for a stored segment of `size` bytes; `read(offset, count)` returns exactly `count` bytes of it;
    /// decrypted stretches end after the sample that brings them to `chunk` bytes. A file's fragments are planned
    /// `from` the end of its `moov`, with the bytes its clear head lost as `removedBefore` (explicit base offsets
    /// move back by them) and the `traf`s of the tracks in `dropping` left out.
    public init(size: Int64, decryptor: any FragmentSampling, chunk: Int64 = Self.chunk, from start: Int64 = 0, removedBefore: Int = 0,
                dropping: Set<UInt32> = [], read: (Int64, Int) throws(ProtectionError) -> [UInt8]) throws(ProtectionError) {
        var parts: [Part] = []
        var samples: [EncryptedSample] = []
        var removed = removedBefore
        var offset: Int64 = start
        var count = 0
        while offset < size {
            count += 1
            guard count <= Self.boxLimit else { throw .malformed("more than \(Self.boxLimit) boxes in a media segment") }
            let (type, boxSize) = try Self.header(at: offset, of: size, read)
            let box = offset..<(offset + boxSize)
            if start > 0, type == "sidx" || type == "mfra" {
                // A file's index and random-access boxes name the stored sizes and offsets: a clear file does without.
                removed += Int(boxSize)
            } else if type == "moof" {
                guard boxSize <= Int64(Self.moofLimit) else { throw .malformed("a 'moof' of \(boxSize) bytes") }
                let bytes = try read(offset, Int(boxSize))
                do {
                    guard let moof = try MP4Box.children(of: bytes, in: 0..<bytes.count).first else { throw MediaError.truncated("'moof'") }
                    samples += try decryptor.samples(of: moof, in: bytes, at: offset).filter { !$0.range.isEmpty }
                    let clear = try FMP4Unprotect.clearMoof(moof, in: bytes, removedBefore: removed, dropping: dropping)
                    removed += bytes.count - clear.count
                    parts.append(.made(clear))
                } catch let error as ProtectionError {
                    throw error
                } catch {
                    throw .malformed("media segment: \(error)")
                }
            } else {
                let inside = samples.filter { $0.range.overlaps(box) }
                samples.removeAll { $0.range.overlaps(box) }
                parts += try Self.stretches(box, inside, chunk: max(chunk, 1))
            }
            offset += boxSize
        }
        guard samples.isEmpty else { throw .malformed("sample runs outside the segment") }
        self.parts = parts
        self.size = size - start - Int64(removed - removedBefore)
    }

    /// The type and size of the box at `offset`.
    private static func header(at offset: Int64, of size: Int64,
                               _ read: (Int64, Int) throws(ProtectionError) -> [UInt8]) throws(ProtectionError) -> (FourCC, Int64) {
        let left = size - offset
        guard left >= 8 else { throw .malformed("a box header is cut short at the end of the segment") }
        let head = try read(offset, Int(min(left, 16)))
        var reader = ByteReader(head)
        do {
            let small = try reader.readUInt32()
            let type = FourCC(rawValue: try reader.readUInt32())
            let boxSize: Int64
            switch small {
            case 0: boxSize = left
            case 1:
                let large = try reader.readUInt64()
                guard large >= 16, large <= UInt64(left) else { throw ProtectionError.malformed("box '\(type)' of \(large) bytes in \(left)") }
                boxSize = Int64(large)
            default:
                guard small >= 8, Int64(small) <= left else { throw ProtectionError.malformed("box '\(type)' of \(small) bytes in \(left)") }
                boxSize = Int64(small)
            }
            return (type, boxSize)
        } catch let error as ProtectionError {
            throw error
        } catch {
            throw .malformed("a box header is cut short")
        }
    }

    /// `box` as stored and decrypted stretches: runs of whole samples about `chunk` long.
    private static func stretches(_ box: Range<Int64>, _ samples: [EncryptedSample], chunk: Int64) throws(ProtectionError) -> [Part] {
        var parts: [Part] = []
        var position = box.lowerBound
        var group: [EncryptedSample] = []
        var end = box.lowerBound
        for sample in samples.sorted(by: { $0.range.lowerBound < $1.range.lowerBound }) {
            guard sample.range.lowerBound >= end, sample.range.upperBound <= box.upperBound else {
                throw .malformed("samples overlap or cross the end of their box")
            }
            end = sample.range.upperBound
            if let last = group.last, sample.range.upperBound - position > chunk {
                parts.append(.decrypted(position..<last.range.upperBound, group))
                position = last.range.upperBound
                group = []
            }
            group.append(sample)
        }
        if let last = group.last {
            parts.append(.decrypted(position..<last.range.upperBound, group))
            position = last.range.upperBound
        }
        if position < box.upperBound { parts.append(.stored(position..<box.upperBound)) }
        return parts
    }
}
