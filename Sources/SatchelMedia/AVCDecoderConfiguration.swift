import SatchelBytes

/// AVCDecoderConfigurationRecord ('avcC', ISO/IEC 14496-15): H.264 profile, level, SPS and PPS.
public struct AVCDecoderConfiguration: Sendable, Equatable {
    /// profile_idc.
    public var profile: UInt8
    /// Constraint flags byte.
    public var compatibility: UInt8
    /// level_idc.
    public var level: UInt8
    /// Bytes in each NAL length prefix (1, 2 or 4).
    public var lengthSize: Int
    /// Sequence parameter sets (NAL units, header byte included).
    public var sps: [[UInt8]]
    /// Picture parameter sets.
    public var pps: [[UInt8]]
    /// Bytes after the PPS list (high-profile extension), kept verbatim.
    public var trailing: [UInt8]

    /// Parses an avcC payload.
    public init(_ bytes: [UInt8]) throws(MediaError) {
        var reader = ByteReader(bytes)
        do {
            guard try reader.readUInt8() == 1 else { throw MediaError.malformed("avcC configurationVersion is not 1") }
            profile = try reader.readUInt8()
            compatibility = try reader.readUInt8()
            level = try reader.readUInt8()
            lengthSize = Int(try reader.readUInt8() & 0x3) + 1
            guard lengthSize != 3 else { throw MediaError.malformed("avcC NAL length size 3") }
            sps = []
            for _ in 0..<(try reader.readUInt8() & 0x1f) { sps.append(try reader.readBytes(Int(try reader.readUInt16()))) }
            pps = []
            for _ in 0..<(try reader.readUInt8()) { pps.append(try reader.readBytes(Int(try reader.readUInt16()))) }
            trailing = reader.readRemaining()
        } catch let error as MediaError {
            throw error
        } catch {
            throw .truncated("avcC")
        }
        guard !sps.isEmpty else { throw .malformed("avcC has no SPS") }
    }

    /// A configuration from SPS and PPS NAL units (4-byte lengths).
    public init(sps: [[UInt8]], pps: [[UInt8]]) throws(MediaError) {
        guard let first = sps.first, first.count >= 4 else { throw .malformed("H.264 stream has no usable SPS") }
        profile = first[1]
        compatibility = first[2]
        level = first[3]
        lengthSize = 4
        self.sps = sps
        self.pps = pps
        trailing = [100, 110, 122, 144].contains(first[1]) ? [0xFC | 1, 0xF8 | 0, 0xF8 | 0, 0] : []
    }

    /// The avcC payload.
    public var bytes: [UInt8] {
        var writer = ByteWriter()
        writer.writeBytes([1, profile, compatibility, level, 0xFC | UInt8(lengthSize - 1), 0xE0 | UInt8(sps.count)])
        for unit in sps {
            writer.writeUInt16(UInt16(unit.count))
            writer.writeBytes(unit)
        }
        writer.writeUInt8(UInt8(pps.count))
        for unit in pps {
            writer.writeUInt16(UInt16(unit.count))
            writer.writeBytes(unit)
        }
        writer.writeBytes(trailing)
        return writer.bytes
    }

    /// The RFC 6381 codecs string, e.g. "avc1.64001f".
    public var codecsString: String {
        "avc1." + Hex.encode([profile, compatibility, level])
    }
}

/// The fields of an H.264 sequence parameter set that packaging needs.
package struct H264SPS: Sendable, Equatable {
    /// Coded width in pixels after cropping.
    package var width: Int
    /// Coded height in pixels after cropping.
    package var height: Int
    /// seq_parameter_set_id.
    package var id: UInt64 = 0
    /// separate_colour_plane_flag.
    package var separateColourPlane = false
    /// log2_max_frame_num_minus4 + 4.
    package var log2MaxFrameNum = 4
    /// pic_order_cnt_type.
    package var pocType: UInt64 = 0
    /// log2_max_pic_order_cnt_lsb_minus4 + 4.
    package var log2MaxPocLsb = 4
    /// delta_pic_order_always_zero_flag.
    package var deltaPicOrderAlwaysZero = false
    /// frame_mbs_only_flag.
    package var frameMbsOnly = true

    /// Parses an SPS NAL unit (header byte included, emulation prevention present).
    package init(_ nal: [UInt8]) throws(MediaError) {
        var bits = BitReader(NALUnit.removeEmulationPrevention(nal.dropFirst()))
        do {
            let profile = try bits.read(8)
            try bits.skip(16)
            id = try bits.readUnsignedExpGolomb()
            var chromaFormat: UInt64 = 1
            if [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135].contains(profile) {
                chromaFormat = try bits.readUnsignedExpGolomb()
                if chromaFormat == 3 { separateColourPlane = try bits.readFlag() }
                _ = try bits.readUnsignedExpGolomb()
                _ = try bits.readUnsignedExpGolomb()
                try bits.skip(1)
                if try bits.readFlag() {
                    for list in 0..<(chromaFormat == 3 ? 12 : 8) where try bits.readFlag() {
                        var last: Int64 = 8, next: Int64 = 8
                        for _ in 0..<(list < 6 ? 16 : 64) where next != 0 {
                            next = (last + (try bits.readSignedExpGolomb()) + 256) % 256
                            last = next == 0 ? last : next
                        }
                    }
                }
            }
            log2MaxFrameNum = Int(try bits.readUnsignedExpGolomb()) + 4
            pocType = try bits.readUnsignedExpGolomb()
            if pocType == 0 {
                log2MaxPocLsb = Int(try bits.readUnsignedExpGolomb()) + 4
            } else if pocType == 1 {
                deltaPicOrderAlwaysZero = try bits.readFlag()
                _ = try bits.readSignedExpGolomb()
                _ = try bits.readSignedExpGolomb()
                let cycle = try bits.readUnsignedExpGolomb()
                guard cycle < 256 else { throw MediaError.malformed("SPS poc cycle \(cycle)") }
                for _ in 0..<cycle { _ = try bits.readSignedExpGolomb() }
            }
            _ = try bits.readUnsignedExpGolomb()
            try bits.skip(1)
            let widthInMbs = try bits.readUnsignedExpGolomb() + 1
            let heightInMapUnits = try bits.readUnsignedExpGolomb() + 1
            frameMbsOnly = try bits.readFlag()
            guard log2MaxFrameNum <= 16, log2MaxPocLsb <= 16 else { throw MediaError.malformed("SPS frame_num / POC sizes") }
            if !frameMbsOnly { try bits.skip(1) }
            try bits.skip(1)
            var crop = (left: UInt64(0), right: UInt64(0), top: UInt64(0), bottom: UInt64(0))
            if try bits.readFlag() {
                crop = (try bits.readUnsignedExpGolomb(), try bits.readUnsignedExpGolomb(), try bits.readUnsignedExpGolomb(), try bits.readUnsignedExpGolomb())
            }
            let cropUnitX: UInt64 = chromaFormat == 0 || chromaFormat == 3 ? 1 : 2
            let cropUnitY: UInt64 = (chromaFormat == 1 ? 2 : 1) * (frameMbsOnly ? 1 : 2)
            let fullWidth = widthInMbs * 16, fullHeight = heightInMapUnits * 16 * (frameMbsOnly ? 1 : 2)
            let cropX = (crop.left + crop.right) * cropUnitX, cropY = (crop.top + crop.bottom) * cropUnitY
            guard fullWidth > cropX, fullHeight > cropY, fullWidth < 100_000, fullHeight < 100_000 else {
                throw MediaError.malformed("SPS picture size")
            }
            width = Int(fullWidth - cropX)
            height = Int(fullHeight - cropY)
        } catch let error as MediaError {
            throw error
        } catch {
            throw .truncated("H.264 SPS")
        }
    }
}
