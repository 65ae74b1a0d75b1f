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
        var units: [ArraySlice<UInt8>] = []
        var start: Int?
        let end = bytes.endIndex
        bytes.withUnsafeBufferPointer { buffer in
            let offset = bytes.startIndex  // buffer[i] is bytes[offset + i]
            var index = 0
            while let zero = nextZero(buffer, from: index, before: buffer.count - 2) {
                if buffer[zero + 1] == 0, buffer[zero + 2] == 1 {
                    if let begin = start {
                        var stop = zero + offset
                        while stop > begin, bytes[stop - 1] == 0 { stop -= 1 }  // trailing zero of a 4-byte start code
                        if stop > begin { units.append(bytes[begin..<stop]) }
                    }
                    index = zero + 3
                    start = index + offset
                } else {
                    index = zero + 1
                }
            }
        }
        if let begin = start, begin < end { units.append(bytes[begin..<end]) }
        return units
    }

    /// The position of the first zero byte of `buffer` in `from..<before` (memchr: many bytes a step).
    static func nextZero(_ buffer: UnsafeBufferPointer<UInt8>, from: Int, before: Int) -> Int? {
        guard from < before, let base = buffer.baseAddress, let found = memchr(base + from, 0, before - from) else { return nil }
        return UnsafeRawPointer(base).distance(to: UnsafeRawPointer(found))
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
        while let zero = nextZero(input, from: index, before: input.count - 2) {
            if input[zero + 1] == 0, input[zero + 2] == 3 {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<(zero + 2)]))
                runStart = zero + 3
                index = zero + 3  // the byte after an escape starts a new zero count
            } else {
                index = zero + 1
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
