import SatchelBytes

/// The SPS and PPS fields that decide an H.264 slice header's length.
public struct H264SliceContext: Sendable, Equatable {
    struct PPSFields: Sendable, Equatable {
        var spsID: UInt64 = 0
        var entropyCodingCABAC = false
        var bottomFieldPicOrderPresent = false
        var refIdxL0Default: UInt64 = 0
        var refIdxL1Default: UInt64 = 0
        var weightedPred = false
        var weightedBipredIdc: UInt64 = 0
        var deblockingFilterControlPresent = false
        var redundantPicCntPresent = false
    }

    var sps: [UInt64: H264SPS] = [:]
    var pps: [UInt64: PPSFields] = [:]

    /// A context from the SPS and PPS NAL units of an avcC; nil when they cannot be read
    /// (callers then keep a conservative fixed leader clear).
    public init?(configuration: AVCDecoderConfiguration) {
        for unit in configuration.sps {
            guard let parsed = try? H264SPS(unit) else { return nil }
            sps[parsed.id] = parsed
        }
        for unit in configuration.pps { guard let (id, fields) = Self.parsePPS(unit) else { return nil }; pps[id] = fields }
        guard !sps.isEmpty, !pps.isEmpty else { return nil }
    }

    /// Bytes from the start of a slice NAL unit (header byte included, emulation prevention as in
    /// the stream) to the first byte of slice data; nil when the header cannot be parsed.
    public func headerLength(ofSlice nal: ArraySlice<UInt8>) -> Int? { headerLength(ofSlice: nal, prefixes: Self.headerPrefixes) }

    func headerLength(ofSlice nal: ArraySlice<UInt8>, prefixes: [Int]) -> Int? {
        guard let first = nal.first else { return nil }
        let type = first & 0x1F
        guard type == 1 || type == 5 else { return nil }
        // A slice header is a few dozen bytes; unescaping a whole slice (tens of kilobytes) per
        // sample is what made encryption slow. Read a short prefix, and a longer one only when
        // the header runs past it (long weight tables or reordering lists).
        let body = nal.dropFirst()
        for prefix in prefixes {
            let window = body.prefix(prefix)
            switch parseHeader(NALUnit.removeEmulationPrevention(window), type: type, referenceIdc: (first >> 5) & 0x3) {
            case .length(let rbspBytes): return 1 + Self.escapedLength(of: rbspBytes, in: window)
            case .invalid: return nil
            case .truncated: if window.count == body.count { return nil }
            }
        }
        return nil
    }

    /// Prefix lengths tried in turn; the last covers any header a conforming stream can carry.
    static let headerPrefixes = [64, 1_024, Int.max]

    private enum HeaderParse { case length(Int), truncated, invalid }

    private func parseHeader(_ rbsp: [UInt8], type: UInt8, referenceIdc: UInt8) -> HeaderParse {
        var bits = BitReader(rbsp)
        do {
            _ = try bits.readUnsignedExpGolomb()  // first_mb_in_slice
            let sliceType = try bits.readUnsignedExpGolomb() % 5
            guard let pps = pps[try bits.readUnsignedExpGolomb()], let sps = sps[pps.spsID] else { return .invalid }
            if sps.separateColourPlane { try bits.skip(2) }
            try bits.skip(sps.log2MaxFrameNum)
            var fieldPic = false
            if !sps.frameMbsOnly {
                fieldPic = try bits.readFlag()
                if fieldPic { try bits.skip(1) }
            }
            if type == 5 { _ = try bits.readUnsignedExpGolomb() }  // idr_pic_id
            if sps.pocType == 0 {
                try bits.skip(sps.log2MaxPocLsb)
                if pps.bottomFieldPicOrderPresent && !fieldPic { _ = try bits.readSignedExpGolomb() }
            }
            if sps.pocType == 1 && !sps.deltaPicOrderAlwaysZero {
                _ = try bits.readSignedExpGolomb()
                if pps.bottomFieldPicOrderPresent && !fieldPic { _ = try bits.readSignedExpGolomb() }
            }
            if pps.redundantPicCntPresent { _ = try bits.readUnsignedExpGolomb() }
            let isB = sliceType == 1, isP = sliceType == 0, isSP = sliceType == 3, isI = sliceType == 2, isSI = sliceType == 4
            if isB { try bits.skip(1) }  // direct_spatial_mv_pred_flag
            var l0 = pps.refIdxL0Default, l1 = pps.refIdxL1Default
            if isP || isSP || isB, try bits.readFlag() {
                l0 = try bits.readUnsignedExpGolomb()
                if isB { l1 = try bits.readUnsignedExpGolomb() }
            }
            // ref_pic_list_modification (type 20/21 extensions are not slices of type 1/5).
            if !isI && !isSI { try Self.skipModification(&bits) }
            if isB { try Self.skipModification(&bits) }
            if (pps.weightedPred && (isP || isSP)) || (pps.weightedBipredIdc == 1 && isB) {
                // pred_weight_table: chroma present unless monochrome (chroma_format_idc 0 is rare; assumed 4:2:0/4:2:2).
                _ = try bits.readUnsignedExpGolomb()
                _ = try bits.readUnsignedExpGolomb()
                for list in 0..<(isB ? 2 : 1) {
                    for _ in 0...(list == 0 ? l0 : l1) where true {
                        if try bits.readFlag() { _ = try bits.readSignedExpGolomb(); _ = try bits.readSignedExpGolomb() }
                        if try bits.readFlag() { for _ in 0..<4 { _ = try bits.readSignedExpGolomb() } }
                    }
                }
            }
            if referenceIdc != 0 {
                if type == 5 {
                    try bits.skip(2)
                } else if try bits.readFlag() {
                    while true {
                        let operation = try bits.readUnsignedExpGolomb()
                        if operation == 0 { break }
                        guard operation <= 6 else { return .invalid }
                        if operation == 1 || operation == 3 { _ = try bits.readUnsignedExpGolomb() }
                        if operation == 2 { _ = try bits.readUnsignedExpGolomb() }
                        if operation == 3 || operation == 6 { _ = try bits.readUnsignedExpGolomb() }
                        if operation == 4 { _ = try bits.readUnsignedExpGolomb() }
                    }
                }
            }
            if pps.entropyCodingCABAC && !isI && !isSI { _ = try bits.readUnsignedExpGolomb() }
            _ = try bits.readSignedExpGolomb()  // slice_qp_delta
            if isSP || isSI {
                if isSP { try bits.skip(1) }
                _ = try bits.readSignedExpGolomb()
            }
            if pps.deblockingFilterControlPresent, try bits.readUnsignedExpGolomb() != 1 {
                _ = try bits.readSignedExpGolomb()
                _ = try bits.readSignedExpGolomb()
            }
        } catch ByteReaderError.truncated {
            return .truncated
        } catch {
            return .invalid
        }
        // Header bits → RBSP bytes (rounded up); the caller maps them back to stream bytes.
        return .length((bits.bitOffset + 7) / 8)
    }

    private static func skipModification(_ bits: inout BitReader) throws {
        guard try bits.readFlag() else { return }
        var count = 0
        while true {
            let idc = try bits.readUnsignedExpGolomb()
            if idc == 3 { return }
            guard idc <= 5, count < 64 else { throw ByteReaderError.invalidLength(Int(idc), at: 0) }
            _ = try bits.readUnsignedExpGolomb()
            count += 1
        }
    }

    /// How many stream bytes hold the first `rbspCount` RBSP bytes (escape bytes included).
    static func escapedLength(of rbspCount: Int, in escaped: ArraySlice<UInt8>) -> Int {
        var zeros = 0, produced = 0, consumed = 0
        for byte in escaped {
            if produced >= rbspCount { break }
            consumed += 1
            if zeros >= 2 && byte == 3 {
                zeros = 0
                continue
            }
            produced += 1
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return consumed
    }

    static func parsePPS(_ nal: [UInt8]) -> (UInt64, PPSFields)? {
        var bits = BitReader(NALUnit.removeEmulationPrevention(nal.dropFirst()))
        var fields = PPSFields()
        do {
            let id = try bits.readUnsignedExpGolomb()
            fields.spsID = try bits.readUnsignedExpGolomb()
            fields.entropyCodingCABAC = try bits.readFlag()
            fields.bottomFieldPicOrderPresent = try bits.readFlag()
            guard try bits.readUnsignedExpGolomb() == 0 else { return nil }  // slice groups (FMO) are not supported
            fields.refIdxL0Default = try bits.readUnsignedExpGolomb()
            fields.refIdxL1Default = try bits.readUnsignedExpGolomb()
            guard fields.refIdxL0Default < 32, fields.refIdxL1Default < 32 else { return nil }
            fields.weightedPred = try bits.readFlag()
            fields.weightedBipredIdc = try bits.read(2)
            _ = try bits.readSignedExpGolomb()
            _ = try bits.readSignedExpGolomb()
            _ = try bits.readSignedExpGolomb()
            fields.deblockingFilterControlPresent = try bits.readFlag()
            try bits.skip(1)
            fields.redundantPicCntPresent = try bits.readFlag()
            return (id, fields)
        } catch {
            return nil
        }
    }
}
