import SatchelBytes

/// A segment index box (`sidx`, ISO/IEC 14496-12 §8.16.3): where each subsegment of a single-file
/// representation lies (DASH `SegmentBase@indexRange`).
public struct SegmentIndex: Sendable, Equatable {
    /// One referenced subsegment.
    public struct Reference: Sendable, Equatable {
        /// Its bytes in the file.
        public var range: ClosedRange<Int64>
        /// Its earliest presentation time, in `timescale` ticks.
        public var time: UInt64
        /// Its duration, in `timescale` ticks.
        public var duration: UInt64
    }

    /// Ticks per second.
    public var timescale: UInt32
    /// The subsegments, in order.
    public var references: [Reference]

    /// At most this many references are read (a real index has a few thousand).
    public static let referenceLimit = 100_000

    /// Reads the `sidx` box at the start of `bytes`, which were read from `offset` in the file (anchors are
    /// relative to the box's end). A hierarchical index (a reference to another `sidx`) is refused.
    public init(_ bytes: [UInt8], at offset: Int64) throws(MediaError) {
        var reader = ByteReader(bytes)
        do {
            let size = try reader.readUInt32()
            guard FourCC(rawValue: try reader.readUInt32()).description == "sidx" else { throw MediaError.malformed("the index range holds no 'sidx' box") }
            guard size >= 12, Int(size) <= bytes.count else { throw MediaError.truncated("'sidx' of \(size) bytes in \(bytes.count)") }
            let version = try reader.readUInt8()
            _ = try reader.readUInt24()
            _ = try reader.readUInt32()  // reference_ID
            timescale = try reader.readUInt32()
            guard timescale > 0 else { throw MediaError.malformed("'sidx' timescale is 0") }
            var time = version == 0 ? UInt64(try reader.readUInt32()) : try reader.readUInt64()
            let firstOffset = version == 0 ? UInt64(try reader.readUInt32()) : try reader.readUInt64()
            _ = try reader.readUInt16()
            let count = Int(try reader.readUInt16())
            guard count <= Self.referenceLimit, count * 12 <= reader.remaining else { throw MediaError.truncated("'sidx' with \(count) references") }
            guard firstOffset < 1 << 52, offset >= 0, offset < 1 << 52 else { throw MediaError.malformed("'sidx' offsets out of range") }
            var start = offset + Int64(size) + Int64(firstOffset)
            references = []
            for _ in 0..<count {
                let word = try reader.readUInt32()
                let duration = UInt64(try reader.readUInt32())
                _ = try reader.readUInt32()  // SAP
                guard word & 0x8000_0000 == 0 else { throw MediaError.unsupported("a hierarchical 'sidx' (a reference to another index)") }
                let length = Int64(word & 0x7FFF_FFFF)
                guard length > 0 else { throw MediaError.malformed("a 'sidx' reference of 0 bytes") }
                references.append(Reference(range: start...(start + length - 1), time: time, duration: duration))
                start += length  // at most 2^52 + 100,000 × 2^31: no overflow
                let (next, overflow) = time.addingReportingOverflow(duration)
                guard !overflow else { throw MediaError.malformed("'sidx' times overflow") }
                time = next
            }
        } catch let error as MediaError {
            throw error
        } catch {
            throw .truncated("'sidx': \(error)")
        }
    }
}
