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
        var index = bytes.startIndex
        var start: Int?
        let end = bytes.endIndex
        while index + 2 < end {
            if bytes[index] == 0, bytes[index + 1] == 0, bytes[index + 2] == 1 {
                if let begin = start {
                    var stop = index
                    while stop > begin, bytes[stop - 1] == 0 { stop -= 1 }  // trailing zero of a 4-byte start code
                    if stop > begin { units.append(bytes[begin..<stop]) }
                }
                index += 3
                start = index
            } else {
                index += 1
            }
        }
        if let begin = start, begin < end { units.append(bytes[begin..<end]) }
        return units
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
        let input = Array(bytes)
        var out: [UInt8] = []
        out.reserveCapacity(input.count)
        var runStart = 0
        var index = 2
        while index < input.count {
            // Escapes are rare: skip quickly while the byte two back is not zero.
            if input[index] == 3 && input[index - 1] == 0 && input[index - 2] == 0 {
                out += input[runStart..<index]
                runStart = index + 1
                index += 3  // the byte after an escape starts a new zero count
            } else {
                index += input[index - 1] == 0 || input[index] == 0 ? 1 : 2
            }
        }
        out += input[min(runStart, input.count)...]
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
