#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SatchelBytes

/// H.264 / HEVC NAL unit helpers: Annex B and length-prefixed framing, emulation prevention.
public enum NALUnit {
    /// The H.264 NAL unit type of a NAL whose first byte is `header`.
    public static func h264Type(_ header: UInt8) -> UInt8 { header & 0x1f }

    /// The HEVC NAL unit type of a NAL whose first byte is `header`.
    public static func hevcType(_ header: UInt8) -> UInt8 { (header >> 1) & 0x3f }

    /// Splits Annex B bytes (00 00 01 / 00 00 00 01 start codes) into NAL units (without start codes).
    public static func splitAnnexB(_ bytes: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        annexBUnits(bytes).map { bytes[$0.range] }
    }

    /// Where the NAL units of Annex B bytes are (indices of `bytes`, start codes left out), and whether each holds an
    /// emulation prevention byte (00 00 03; without one, removing emulation prevention changes nothing): for work
    /// on the bytes in place, with no slice holding on to them. One pass, sixteen bytes a step.
    public static func annexBUnits(_ bytes: ArraySlice<UInt8>) -> [(range: Range<Int>, escaped: Bool)] {
        var units: [(range: Range<Int>, escaped: Bool)] = []
        let offset = bytes.startIndex  // buffer[i] is bytes[offset + i]
        bytes.withUnsafeBufferPointer { buffer in
            var start: Int?
            var escaped = false
            var index = 0
            while let zeros = nextZeroPair(buffer, from: index), zeros + 2 < buffer.count {
                switch buffer[zeros + 2] {
                case 1:
                    if let begin = start {
                        var stop = zeros
                        while stop > begin, buffer[stop - 1] == 0 { stop -= 1 }  // trailing zero of a 4-byte start code
                        if stop > begin { units.append(((begin + offset)..<(stop + offset), escaped)) }
                    }
                    index = zeros + 3
                    start = index
                    escaped = false
                case 3:
                    escaped = escaped || start != nil
                    index = zeros + 3  // the byte after an escape starts a new zero count
                default:
                    index = zeros + 1
                }
            }
            if let begin = start, begin < buffer.count { units.append(((begin + offset)..<(buffer.count + offset), escaped)) }
        }
        return units
    }

    /// The position of the first two zero bytes in a row of `buffer` from `from` on: two overlapping 16-byte loads
    /// compared at once, the bytes looked at one by one only where a pair is (rare in coded media).
    static func nextZeroPair(_ buffer: UnsafeBufferPointer<UInt8>, from: Int) -> Int? {
        guard from >= 0, let base = buffer.baseAddress else { return nil }
        let raw = UnsafeRawPointer(base), zero = SIMD16<UInt8>(repeating: 0)
        var index = from
        while index + 17 <= buffer.count {
            let here = raw.loadUnaligned(fromByteOffset: index, as: SIMD16<UInt8>.self)
            let next = raw.loadUnaligned(fromByteOffset: index + 1, as: SIMD16<UInt8>.self)
            if any((here .== zero) .& (next .== zero)) {
                for position in index..<(index + 16) where buffer[position] == 0 && buffer[position + 1] == 0 { return position }
            }
            index += 16
        }
        while index + 1 < buffer.count {
            if buffer[index] == 0, buffer[index + 1] == 0 { return index }
            index += 1
        }
        return nil
    }

    /// Splits length-prefixed NAL units (MP4 form) with `lengthSize`-byte lengths.
    public static func splitLengthPrefixed(_ bytes: ArraySlice<UInt8>, lengthSize: Int = 4) throws(MediaError) -> [ArraySlice<UInt8>] {
        var units: [ArraySlice<UInt8>] = []
        var index = bytes.startIndex
        while index < bytes.endIndex {
            guard index + lengthSize <= bytes.endIndex else { throw .truncated("NAL length field") }
            var length = 0
            for offset in 0..<lengthSize { length = length << 8 | Int(bytes[index + offset]) }
            index += lengthSize
            guard length <= bytes.endIndex - index else { throw .truncated("NAL unit of \(length) bytes") }
            units.append(bytes[index..<(index + length)])
            index += length
        }
        return units
    }

    /// Joins NAL units with 4-byte length prefixes.
    public static func lengthPrefixed<C: Collection>(_ units: C) -> [UInt8] where C.Element == ArraySlice<UInt8> {
        var out: [UInt8] = []
        out.reserveCapacity(units.reduce(0) { $0 + $1.count + 4 })
        for unit in units {
            let n = unit.count
            out += [UInt8(truncatingIfNeeded: n >> 24), UInt8(truncatingIfNeeded: n >> 16), UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n)]
            out += unit
        }
        return out
    }

    /// Removes emulation prevention bytes (the 03 of 00 00 03) to give the RBSP.
    public static func removeEmulationPrevention<C: Collection>(_ bytes: C) -> [UInt8] where C.Element == UInt8 {
        if let rbsp = bytes.withContiguousStorageIfAvailable(removeEmulationPrevention) { return rbsp }
        return Array(bytes).withUnsafeBufferPointer(removeEmulationPrevention)
    }

    private static func removeEmulationPrevention(_ input: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(input.count)
        var runStart = 0
        var index = 0
        // Escapes are rare: jump from zero byte to zero byte.
        while let zeros = nextZeroPair(input, from: index), zeros + 2 < input.count {
            if input[zeros + 2] == 3 {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<(zeros + 2)]))
                runStart = zeros + 3
                index = zeros + 3  // the byte after an escape starts a new zero count
            } else {
                index = zeros + 1
            }
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: input[min(runStart, input.count)...]))
        return out
    }

    /// Inserts emulation prevention bytes: 03 after 00 00 when the next byte is 00-03.
    public static func addEmulationPrevention<C: Collection>(_ bytes: C) -> [UInt8] where C.Element == UInt8 {
        let input = Array(bytes)
        var out: [UInt8] = []
        out.reserveCapacity(input.count + input.count / 64 + 4)
        var zeros = 0
        var runStart = 0
        for index in input.indices {
            let byte = input[index]
            if zeros >= 2 && byte <= 3 {
                out += input[runStart..<index]
                out.append(3)
                runStart = index
                zeros = 0
            }
            zeros = byte == 0 ? zeros + 1 : 0
        }
        out += input[runStart...]
        return out
    }
}
