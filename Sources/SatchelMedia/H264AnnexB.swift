/// Builds Annex B access units (start codes) for MPEG-TS from MP4-style NAL units.
public enum H264AnnexB {
    static let startCode: [UInt8] = [0, 0, 0, 1]
    static let accessUnitDelimiter: [UInt8] = [0x09, 0xF0]
    static let delimiterWithStartCode: [UInt8] = [0, 0, 0, 1, 0x09, 0xF0]

    /// The same access unit as a list of parts (start codes and NAL units), so a muxer can copy
    /// them straight into packets without building the access unit first.
    public static func accessUnitParts(_ units: [ArraySlice<UInt8>], configuration: AVCDecoderConfiguration, isSync: Bool) -> [ArraySlice<UInt8>] {
        var parts: [ArraySlice<UInt8>] = [delimiterWithStartCode[...]]
        parts.reserveCapacity(units.count * 2 + 6)
        let hasSPS = units.contains { $0.first.map(NALUnit.h264Type) == 7 }
        if isSync && !hasSPS {
            for set in configuration.sps + configuration.pps {
                parts.append(startCode[...])
                parts.append(set[...])
            }
        }
        for unit in units where !unit.isEmpty && NALUnit.h264Type(unit[unit.startIndex]) != 9 {
            parts.append(startCode[...])
            parts.append(unit)
        }
        return parts
    }

    /// An access unit: an AUD first, SPS and PPS before a sync sample unless the sample has them,
    /// then the sample's NAL units (its own AUDs dropped).
    public static func accessUnit<C: Collection>(_ units: C, configuration: AVCDecoderConfiguration, isSync: Bool) -> [UInt8]
    where C.Element: Collection, C.Element.Element == UInt8 {
        var out: [UInt8] = startCode + accessUnitDelimiter
        let types = units.map { $0.first.map(NALUnit.h264Type) ?? 0 }
        if isSync && !types.contains(7) {
            for sps in configuration.sps { out += startCode + sps }
            for pps in configuration.pps { out += startCode + pps }
        }
        for (unit, type) in zip(units, types) where type != 9 && !unit.isEmpty {
            out += startCode
            out += unit
        }
        return out
    }
}
