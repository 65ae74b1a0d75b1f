import SatchelBytes

/// One elementary stream of a transport stream.
public struct TSStream: Sendable, Equatable {
    /// The packet ID.
    public var pid: UInt16
    /// PES stream_id (0xE0 video, 0xC0 audio, 0xBD private).
    public var streamID: UInt8
    /// PMT stream_type (0x1B H.264, 0x0F AAC, 0xDB / 0xCF for SAMPLE-AES, …).
    public var streamType: UInt8
    /// ES_info descriptors for the PMT.
    public var descriptors: [UInt8]

    /// Creates a stream description.
    public init(pid: UInt16, streamID: UInt8, streamType: UInt8, descriptors: [UInt8] = []) {
        self.pid = pid
        self.streamID = streamID
        self.streamType = streamType
        self.descriptors = descriptors
    }

    /// The usual H.264 video stream on PID 0x100.
    public static let h264 = TSStream(pid: 0x100, streamID: 0xE0, streamType: 0x1B)
    /// The usual AAC (ADTS) audio stream on PID 0x101.
    public static let aac = TSStream(pid: 0x101, streamID: 0xC0, streamType: 0x0F)
    /// AC-3 audio on PID 0x101, with the registration descriptor (`AC-3`) ATSC A/52 and ffmpeg give it: a reader tells
    /// AC-3 from E-AC-3 by it.
    public static let ac3 = TSStream(pid: 0x101, streamID: 0xBD, streamType: 0x81, descriptors: registration("AC-3"))
    /// E-AC-3 audio on PID 0x101, with its registration descriptor (`EAC3`).
    public static let eac3 = TSStream(pid: 0x101, streamID: 0xBD, streamType: 0x87, descriptors: registration("EAC3"))

    /// The descriptors a stream of `streamType` carries as Satchel writes it: AC-3's and E-AC-3's registration, else none.
    public static func descriptors(ofType streamType: UInt8) -> [UInt8] {
        switch streamType {
        case ac3.streamType: ac3.descriptors
        case eac3.streamType: eac3.descriptors
        default: []
        }
    }

    /// A registration descriptor (ISO/IEC 13818-1 §2.6.8: tag 5) naming `format`, four ASCII characters.
    static func registration(_ format: String) -> [UInt8] {
        [0x05, 0x04] + Array(format.utf8.prefix(4))
    }
}

/// Writes MPEG-2 transport stream packets (ISO/IEC 13818-1): PAT, PMT and PES.
///
/// Where a rendition's transport packets stand between two segments: the next continuity counter of each PID, and
/// whether the next segment does not follow the last one written (its first packet of each PID then says so with the
/// discontinuity indicator, so a player expects the jump).
public struct TSContinuity: Sendable, Equatable {
    /// The last continuity counter written on each PID.
    public var counters: [UInt16: UInt8]
    /// The next packets start a discontinuity.
    public var discontinuity: Bool

    /// A fresh start (no counters yet), with or without a discontinuity.
    public init(counters: [UInt16: UInt8] = [:], discontinuity: Bool = false) {
        self.counters = counters
        self.discontinuity = discontinuity
    }
}

/// Continuity counters live in the muxer, so one muxer per rendition keeps them running across segments (or a
/// ``TSContinuity`` carried from one muxer to the next).
public struct TSMuxer: Sendable {
    /// Size of a TS packet.
    public static let packetSize = 188
    /// The PMT's PID.
    public static let pmtPID: UInt16 = 0x1000

    /// The streams, in PMT order.
    public let streams: [TSStream]
    /// The PID that carries the PCR.
    public let pcrPID: UInt16
    /// The last counter written on each of the 8,192 PIDs (0xFF: none yet): a table, so that a packet costs no hashing.
    private var continuity = [UInt8](repeating: 0xFF, count: 8192)
    /// PIDs whose next packet carries the discontinuity indicator (a few, and none once each has had its packet).
    private var discontinuous: [UInt16] = []

    /// A muxer for `streams`; `pcrPID` carries the PCR (the first stream when nil). Its counters go on from
    /// `continuity`.
    public init(streams: [TSStream], continuity: TSContinuity = TSContinuity(), pcrPID: UInt16? = nil) {
        self.streams = streams
        self.pcrPID = pcrPID ?? streams.first?.pid ?? 0x100
        for (pid, counter) in continuity.counters where pid < 8192 { self.continuity[Int(pid)] = counter & 0x0F }
        if continuity.discontinuity { discontinuous = [0, Self.pmtPID] + streams.map(\.pid) }
    }

    /// Where the counters stand now (for the next segment of the rendition).
    public var state: TSContinuity {
        var counters: [UInt16: UInt8] = [:]
        for (pid, counter) in continuity.enumerated() where counter != 0xFF { counters[UInt16(pid)] = counter }
        return TSContinuity(counters: counters)
    }

    /// PAT and PMT packets; write them at the start of every segment.
    public mutating func tables() -> [UInt8] {
        var pat = ByteWriter()
        pat.writeUInt16(1)  // program_number
        pat.writeUInt16(0xE000 | Self.pmtPID)
        var pmt = ByteWriter()
        pmt.writeUInt16(0xE000 | pcrPID)
        pmt.writeUInt16(0xF000)  // program_info_length 0
        for stream in streams {
            pmt.writeUInt8(stream.streamType)
            pmt.writeUInt16(0xE000 | stream.pid)
            pmt.writeUInt16(0xF000 | UInt16(stream.descriptors.count))
            pmt.writeBytes(stream.descriptors)
        }
        return sectionPacket(pid: 0, tableID: 0x00, tableIDExtension: 1, body: pat.bytes)
            + sectionPacket(pid: Self.pmtPID, tableID: 0x02, tableIDExtension: 1, body: pmt.bytes)
    }

    private mutating func sectionPacket(pid: UInt16, tableID: UInt8, tableIDExtension: UInt16, body: [UInt8]) -> [UInt8] {
        var section = ByteWriter()
        section.writeUInt8(tableID)
        section.writeUInt16(0xB000 | UInt16(body.count + 9))  // syntax 1, reserved, length incl. header rest and CRC
        section.writeUInt16(tableIDExtension)
        section.writeUInt8(0xC1)  // version 0, current
        section.writeUInt8(0)
        section.writeUInt8(0)
        section.writeBytes(body)
        section.writeUInt32(MPEG2CRC32.checksum(section.bytes))
        var packet = ByteWriter(capacity: Self.packetSize)
        packet.writeUInt8(0x47)
        packet.writeUInt16(0x4000 | pid)
        if takeDiscontinuity(pid) {
            packet.writeUInt8(0x30 | nextContinuity(pid))
            packet.writeBytes([1, 0x80])  // an adaptation field with the discontinuity indicator
        } else {
            packet.writeUInt8(0x10 | nextContinuity(pid))
        }
        packet.writeUInt8(0)  // pointer_field
        packet.writeBytes(section.bytes.prefix(Self.packetSize - 5))
        packet.writeBytes(repeatElement(0xFF, count: max(Self.packetSize - packet.count, 0)))
        return packet.bytes
    }

    /// The continuity counter of the next packet of `pid` written elsewhere (a stored packet passed on as it is), and
    /// whether that packet must carry the discontinuity indicator.
    public mutating func nextPacket(of pid: UInt16) -> (counter: UInt8, discontinuity: Bool) {
        (nextContinuity(pid), takeDiscontinuity(pid))
    }

    /// Whether the next packet of `pid` must carry the discontinuity indicator.
    public func startsDiscontinuity(_ pid: UInt16) -> Bool { discontinuous.contains(pid) }

    /// Whether `pid`'s next packet carries the discontinuity indicator; it is then taken off the list.
    private mutating func takeDiscontinuity(_ pid: UInt16) -> Bool {
        guard !discontinuous.isEmpty, let index = discontinuous.firstIndex(of: pid) else { return false }
        discontinuous.remove(at: index)
        return true
    }

    private mutating func nextContinuity(_ pid: UInt16) -> UInt8 {
        let index = Int(pid & 0x1FFF), value = (continuity[index] &+ 1) & 0x0F  // 0xFF (none yet) gives 0
        continuity[index] = value
        return value
    }

    /// Packets of one PES packet carrying `payload`, timestamps in 90 kHz units.
    ///
    /// - Parameters:
    ///   - stream: the elementary stream (its PID and stream ID).
    ///   - pts: the presentation time.
    ///   - dts: the decoding time, when it differs from `pts`.
    ///   - payload: the PES packet's data.
    ///   - pcr: a PCR (90 kHz base) to put in the first packet's adaptation field.
    ///   - randomAccess: sets random_access_indicator (keyframes).
    ///   - out: where the packets are appended.
    public mutating func pes(_ stream: TSStream, pts: Int64, dts: Int64?, payload: [UInt8], pcr: Int64? = nil,
                             randomAccess: Bool = false, into out: inout [UInt8]) {
        pes(stream, pts: pts, dts: dts, parts: [payload[...]], pcr: pcr, randomAccess: randomAccess, into: &out)
    }

    /// The same, with the payload given as consecutive parts (no need to join them first).
    public mutating func pes(_ stream: TSStream, pts: Int64, dts: Int64?, parts: [ArraySlice<UInt8>], pcr: Int64? = nil,
                             randomAccess: Bool = false, into out: inout [UInt8]) {
        let total = parts.reduce(0) { $0 + $1.count } + 19
        out.reserveCapacity(out.count + (total / 184 + 2) * Self.packetSize)
        packetize(stream, pts: pts, dts: dts, parts: parts, pcr: pcr, randomAccess: randomAccess, into: &out)
    }

    /// The packets of one PES packet, written to `out` (specialized for each output in this module).
    mutating func packetize<Output: TSOutput>(_ stream: TSStream, pts: Int64, dts: Int64?, parts: [ArraySlice<UInt8>], pcr: Int64?,
                                              randomAccess: Bool, into out: inout Output) {
        let payloadCount = parts.reduce(0) { $0 + $1.count }
        let hasDTS = dts != nil && dts != pts
        let headerDataLength = hasDTS ? 10 : 5
        let length = 3 + headerDataLength + payloadCount
        let pesLength = stream.streamID >= 0xE0 && stream.streamID <= 0xEF || length > 0xFFFF ? 0 : UInt16(length)
        var headerBytes: [UInt8] = [0, 0, 1, stream.streamID, UInt8(pesLength >> 8), UInt8(pesLength & 0xFF), 0x80, hasDTS ? 0xC0 : 0x80,
                                    UInt8(headerDataLength)]
        Self.appendTimestamp(&headerBytes, prefix: hasDTS ? 0x3 : 0x2, value: pts)
        if hasDTS, let dts { Self.appendTimestamp(&headerBytes, prefix: 0x1, value: dts) }

        let total = headerBytes.count + payloadCount
        guard total > 0 else { return }
        // The PID's counter is read once and stored once per PES packet, not looked up for each transport packet.
        var counter = continuity[Int(stream.pid & 0x1FFF)]
        let discontinuity = takeDiscontinuity(stream.pid)
        let pcrBase: UInt64? = stream.pid == pcrPID ? pcr.map { UInt64(max($0, 0)) & 0x1_FFFF_FFFF } : nil
        // Each packet written where the output keeps it: its 4-byte header and adaptation field, then its payload bytes
        // copied straight from the PES header and the parts (one copy of the media, no per-packet allocation).
        var cursor = PayloadCursor(header: headerBytes, parts: parts)
        var offset = 0
        var first = true
        while offset < total {
            let remaining = total - offset
            let wantsAdaptation = first && (pcr != nil || randomAccess || discontinuity)
            var adaptationLength = 0  // the adaptation field's bytes, its length byte included
            var flags: UInt8 = 0
            if wantsAdaptation {
                flags = (randomAccess ? 0x40 : 0) | (discontinuity ? 0x80 : 0) | (pcrBase != nil ? 0x10 : 0)
                adaptationLength = pcrBase != nil ? 8 : 2
            }
            var capacity = 184 - adaptationLength
            if remaining < capacity {
                // Stuff through the adaptation field so the packet is exactly 188 bytes.
                adaptationLength += capacity - remaining
                capacity = remaining
            }
            let (isFirst, packetCounter) = (first, (counter &+ 1) & 0x0F)
            counter = packetCounter
            out.packet { packet in
                packet[0] = 0x47
                packet[1] = UInt8((isFirst ? 0x40 : 0) | UInt8(stream.pid >> 8))
                packet[2] = UInt8(stream.pid & 0xFF)
                packet[3] = (adaptationLength > 0 ? 0x30 : 0x10) | packetCounter
                var fieldsEnd = 4
                if adaptationLength > 0 {
                    packet[4] = UInt8(adaptationLength - 1)
                    fieldsEnd = 5
                    if adaptationLength >= 2 {
                        packet[5] = flags
                        fieldsEnd = 6
                    }
                    if wantsAdaptation, let base = pcrBase {
                        packet[6] = UInt8(truncatingIfNeeded: base >> 25)
                        packet[7] = UInt8(truncatingIfNeeded: base >> 17)
                        packet[8] = UInt8(truncatingIfNeeded: base >> 9)
                        packet[9] = UInt8(truncatingIfNeeded: base >> 1)
                        packet[10] = UInt8(truncatingIfNeeded: (base & 1) << 7 | 0x7E)
                        packet[11] = 0
                        fieldsEnd = 12
                    }
                    // Stuffing bytes (0xFF) after the fields.
                    for index in fieldsEnd..<(4 + adaptationLength) { packet[index] = 0xFF }
                }
                cursor.copy(into: UnsafeMutableRawBufferPointer(rebasing: packet[(4 + adaptationLength)...]))
            }
            offset += capacity
            first = false
        }
        continuity[Int(stream.pid & 0x1FFF)] = counter
    }

    private static func appendTimestamp(_ bytes: inout [UInt8], prefix: UInt8, value: Int64) {
        let v = UInt64(max(value, 0)) & 0x1_FFFF_FFFF
        bytes.append(prefix << 4 | UInt8((v >> 29) & 0x0E) | 1)
        bytes.append(UInt8((v >> 22) & 0xFF))
        bytes.append(UInt8((v >> 14) & 0xFE) | 1)
        bytes.append(UInt8((v >> 7) & 0xFF))
        bytes.append(UInt8((v << 1) & 0xFE) | 1)
    }
}

/// PMT descriptors.
public enum TSDescriptor {
    /// private_data_indicator_descriptor (tag 0x0F) with a four-character code ('zavc', 'aacd', …).
    public static func privateDataIndicator(_ code: FourCC) -> [UInt8] { [0x0F, 4] + code.bytes }

    /// registration_descriptor (tag 0x05) with a format identifier and additional bytes.
    public static func registration(_ format: FourCC, additional: [UInt8] = []) -> [UInt8] {
        [0x05, UInt8(4 + additional.count)] + format.bytes + additional
    }
}
