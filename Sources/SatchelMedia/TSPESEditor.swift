import SatchelBytes

/// What an edit did to the payload of one PES packet (gathered whole, its header first).
public enum TSPayloadEdit: Sendable {
    /// Edited in place, its length kept: these ranges of the gathered PES packet changed (in ascending order).
    case changed([Range<Int>])
    /// A payload of another length: the PES packet is packetized anew.
    case remade([UInt8])
}

/// One stretch of an edited segment as it goes out: stored bytes of the segment (edited where they lie), or bytes
/// made anew (the new PAT and PMT, a PES packet packetized again).
public enum TSSegmentPart: Sendable, Equatable {
    /// This range of the segment's bytes, as they now stand.
    case stored(Range<Int>)
    /// Bytes made anew.
    case made([UInt8])
}

/// Passes an MPEG-TS segment on with the payload of each PES packet edited, as the segment arrives in pieces of any
/// size. A PES packet is gathered whole once the next one of its PID starts (or the segment ends) and handed to the
/// edit; when the edit keeps the length, only the bytes it changed are written back into the stored transport packets,
/// which then go out as they are — timestamps, PCR, random-access flags and adaptation fields untouched — so a segment
/// costs one gathering of its payload, not a new packetization. A payload of another length is packetized again. The
/// PAT and PMT are written anew (stream types changed by `retype`, the stored descriptors left out — AC-3 and E-AC-3 get
/// their registration descriptors —, the PCR on the stored PMT's
/// PID); continuity counters go on from the rendition's previous segment, and after a seek each PID's first packet
/// carries the discontinuity indicator. Packets of PIDs the first PMT does not declare are left out.
public struct TSPESEditor: Sendable {
    /// Edits the payload at `payload` of a gathered PES packet of a stream of the stored type given.
    public typealias Edit = (inout [UInt8], _ payload: Range<Int>, _ streamType: UInt8) throws(MediaError) -> TSPayloadEdit

    private let retype: @Sendable (UInt8) throws(MediaError) -> UInt8
    /// Where the counters stand once the segment is through (`finish(_:)`): the next segment goes on from here.
    public private(set) var continuity: TSContinuity
    /// How many PES packets were packetized again (their length changed, or a seek's discontinuity indicator
    /// needed an adaptation field their first packet does not have).
    public private(set) var remadeCount = 0

    /// Stored bytes from the start of packet `firstPacket` of the segment on, not yet given out.
    private var pending: [UInt8] = []
    private var firstPacket = 0
    /// Packets of the segment read (whole ones), and given out.
    private var parsed = 0
    private var given = 0
    /// What becomes of each packet from `firstPacket` on.
    private var marks: [Mark] = []
    /// PES packets not yet given out whole; the first is number `firstPES` (numbers count from the segment's start).
    private var packets: [PESPacket] = []
    private var firstPES = 0
    /// The PES packet open on each PID (-1: none), and the stored stream type of each PID the PMT declares (-1: not
    /// declared): tables of all 8,192 PIDs, so that a packet costs no hashing.
    private var open = [Int](repeating: -1, count: 8192)
    private var kinds = [Int16](repeating: -1, count: 8192)
    private var pmtPID: UInt16?
    private var muxer: TSMuxer?
    private var tablesWritten = false
    /// PIDs with a PES packet edited already (a seek's discontinuity indicator goes on the first only).
    private var edited = [Bool](repeating: false, count: 8192)
    private var scratch: [UInt8] = []

    private enum Mark { case drop, tables, media(Int) }

    private struct PESPacket {
        var pid: UInt16
        var first: Int
        var last: Int
        /// Where the pieces of the PES packet are: byte offsets in the segment, and lengths.
        var pieces: [(offset: Int, count: Int)]
        /// The first packet's PCR, random-access flag, and whether it has an adaptation field with flags.
        var pcr: Int64?
        var randomAccess: Bool
        var flagged: Bool
        var done = false
        var remade: Remade?
    }

    private struct Remade {
        var streamID: UInt8
        var pts: Int64
        var dts: Int64?
        var payload: [UInt8]
    }

    /// An editor for one segment whose counters go on from `continuity`; `retype` gives the written stream type of a
    /// stored one (or refuses it).
    public init(continuity: TSContinuity = TSContinuity(), retype: @escaping @Sendable (UInt8) throws(MediaError) -> UInt8) {
        self.retype = retype
        self.continuity = continuity
    }

    /// Reads `piece` (the next bytes of the segment) and gives the packets now complete, edited.
    public mutating func read(_ piece: ArraySlice<UInt8>, edit: Edit) throws(MediaError) -> [UInt8] {
        var out: [UInt8] = []
        try read(piece, edit: edit) { out.append(contentsOf: $0) }
        return out
    }

    /// The same, the packets handed to `sink` in stretches as they lie in memory (no copy made for them first).
    public mutating func read(_ piece: ArraySlice<UInt8>, edit: Edit, into sink: (UnsafeRawBufferPointer) -> Void) throws(MediaError) {
        pending.append(contentsOf: piece)
        try withPending(sink) { (editor, bytes) throws(MediaError) in
            while (editor.parsed - editor.firstPacket + 1) * TSMuxer.packetSize <= bytes.count {
                try editor.readPacket(editor.parsed, in: bytes, edit: edit)
                editor.parsed += 1
            }
        }
        if given - firstPacket >= 1024 {
            pending.removeFirst((given - firstPacket) * TSMuxer.packetSize)
            marks.removeFirst(given - firstPacket)
            firstPacket = given
        }
    }

    /// The end of the segment: the PES packets still open, edited, and every packet left (a cut last one left out).
    public mutating func finish(edit: Edit) throws(MediaError) -> [UInt8] {
        var out: [UInt8] = []
        try finish(edit: edit) { out.append(contentsOf: $0) }
        return out
    }

    /// The same, the packets handed to `sink`.
    public mutating func finish(edit: Edit, into sink: (UnsafeRawBufferPointer) -> Void) throws(MediaError) {
        try withPending(sink) { (editor, bytes) throws(MediaError) in try editor.completeAll(in: bytes, edit: edit) }
        guard let muxer else { throw .malformed("the transport stream declares no elementary stream") }
        continuity = muxer.state
    }

    /// A whole segment edited where it lies (`segment`, its bytes, is written into): the stretches that make the
    /// edited segment, in order — mostly ranges of `segment` itself, so that nothing is copied to send it. A cut last
    /// packet is left out. For an editor that has read nothing yet.
    public mutating func edit(segment: UnsafeMutableRawBufferPointer, edit: Edit) throws(MediaError) -> [TSSegmentPart] {
        guard parsed == 0, pending.isEmpty else { throw .malformed("the editor has read part of a segment already") }
        while (parsed + 1) * TSMuxer.packetSize <= segment.count {
            try readPacket(parsed, in: segment, edit: edit)
            parsed += 1
        }
        var parts: [TSSegmentPart] = []
        try completeAll(in: segment, edit: edit) { parts.append($0) }
        guard let muxer else { throw .malformed("the transport stream declares no elementary stream") }
        continuity = muxer.state
        return parts
    }

    /// Runs `body` on the pending bytes (moved out of `self` meanwhile), then gives `sink` what is done.
    private mutating func withPending(_ sink: (UnsafeRawBufferPointer) -> Void,
                                      _ body: (inout TSPESEditor, UnsafeMutableRawBufferPointer) throws(MediaError) -> Void) throws(MediaError) {
        var storage = pending
        pending = []
        defer { pending = storage }
        var failure: MediaError?
        storage.withUnsafeMutableBytes { bytes in
            do throws(MediaError) { try body(&self, bytes) } catch { failure = error; return }
            drain(in: bytes) { part in
                switch part {
                case let .stored(range): sink(UnsafeRawBufferPointer(rebasing: bytes[range]))
                case let .made(made): made.withUnsafeBytes(sink)
                }
            }
        }
        if let failure { throw failure }
    }

    /// Edits the PES packets still open (the segment's end), then gives out everything left to `emit`.
    private mutating func completeAll(in bytes: UnsafeMutableRawBufferPointer, edit: Edit, emit: ((TSSegmentPart) -> Void)? = nil) throws(MediaError) {
        for id in open.filter({ $0 >= 0 }).sorted() { try complete(id, in: bytes, edit: edit) }
        open = [Int](repeating: -1, count: 8192)
        if let emit { drain(in: bytes, emit: emit) }
    }

    /// Reads packet `number` of the segment; `bytes` holds the segment from packet `firstPacket` on.
    private mutating func readPacket(_ number: Int, in bytes: UnsafeMutableRawBufferPointer, edit: Edit) throws(MediaError) {
        let at = (number - firstPacket) * TSMuxer.packetSize, end = at + TSMuxer.packetSize
        guard at >= 0, end <= bytes.count, bytes[at] == 0x47 else {
            throw .malformed("MPEG-TS sync byte missing at offset \(number * TSMuxer.packetSize)")
        }
        let pusi = bytes[at + 1] & 0x40 != 0
        let pid = UInt16(bytes[at + 1] & 0x1F) << 8 | UInt16(bytes[at + 2])
        let control = (bytes[at + 3] >> 4) & 0x3
        var start = at + 4
        var pcr: Int64?
        var randomAccess = false, flagged = false
        if control & 0x2 != 0 {
            let length = Int(bytes[at + 4])
            guard length <= 183 else { throw .malformed("an adaptation field longer than its packet at offset \(number * TSMuxer.packetSize)") }
            if length > 0 {
                let flags = bytes[at + 5]
                flagged = true
                randomAccess = flags & 0x40 != 0
                if flags & 0x10 != 0, length >= 7 {
                    func b(_ index: Int) -> Int64 { Int64(bytes[at + 6 + index]) }
                    pcr = b(0) << 25 | b(1) << 17 | b(2) << 9 | b(3) << 1 | b(4) >> 7
                }
            }
            start += 1 + length
        }
        var mark = Mark.drop
        if control & 0x1 != 0, start < end {
            if pid == 0 {
                if pusi, let pmt = try TSDemuxer.parsePAT(Array(bytes[start..<end])[...]) { pmtPID = pmt; mark = .tables }
            } else if pid == pmtPID {
                if pusi, muxer == nil { try declare(Array(bytes[start..<end])[...]) }
            } else if kinds[Int(pid)] >= 0 {
                let offset = firstPacket * TSMuxer.packetSize + start
                if pusi {
                    if open[Int(pid)] >= 0 { try complete(open[Int(pid)], in: bytes, edit: edit) }
                    let id = firstPES + packets.count
                    packets.append(PESPacket(pid: pid, first: number, last: number, pieces: [(offset, end - start)],
                                             pcr: pcr, randomAccess: randomAccess, flagged: flagged))
                    open[Int(pid)] = id
                    mark = .media(id)
                } else if open[Int(pid)] >= 0 {
                    let id = open[Int(pid)]
                    packets[id - firstPES].pieces.append((offset, end - start))
                    packets[id - firstPES].last = number
                    mark = .media(id)
                }
            }
        }
        marks.append(mark)
    }

    /// The streams of the first PMT, and the muxer that writes the new tables and keeps the counters.
    private mutating func declare(_ payload: ArraySlice<UInt8>) throws(MediaError) {
        var streams: [TSStream] = []
        for (pid, type) in try TSDemuxer.parsePMT(payload) where kinds[Int(pid)] < 0 {
            kinds[Int(pid)] = Int16(type)
            let written = try retype(type)
            streams.append(TSStream(pid: pid, streamID: 0, streamType: written, descriptors: TSStream.descriptors(ofType: written)))
        }
        guard !streams.isEmpty else { throw .malformed("the transport stream declares no elementary stream") }
        muxer = TSMuxer(streams: streams, continuity: continuity, pcrPID: try TSDemuxer.parsePCRPID(payload))
    }

    /// Gathers PES packet `id`, edits it, and writes the changed bytes back into `bytes` (or keeps the remade payload).
    private mutating func complete(_ id: Int, in bytes: UnsafeMutableRawBufferPointer, edit: Edit) throws(MediaError) {
        guard id >= firstPES, id - firstPES < packets.count else { return }
        var packet = packets[id - firstPES]
        let type = UInt8(truncatingIfNeeded: kinds[Int(packet.pid)])
        let base = firstPacket * TSMuxer.packetSize
        scratch.removeAll(keepingCapacity: true)
        for piece in packet.pieces {
            scratch.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[(piece.offset - base)..<(piece.offset - base + piece.count)]))
        }
        guard scratch.count >= 9, scratch[0] == 0, scratch[1] == 0, scratch[2] == 1 else { throw .malformed("PES start code missing") }
        let flags = scratch[7], payloadStart = 9 + Int(scratch[8])
        guard payloadStart <= scratch.count else { throw .truncated("PES header") }
        let pts = flags & 0x80 != 0 ? TSPackets.timestamp(scratch, at: 9, headerEnd: payloadStart) : nil
        let dts = flags & 0x40 != 0 ? TSPackets.timestamp(scratch, at: 14, headerEnd: payloadStart) : pts
        guard let pts else { throw .malformed("a PES packet of PID \(packet.pid) has no timestamp") }
        // After a seek, a PID's first packet carries the discontinuity indicator: in its adaptation field's flags,
        // or, when it has none, in the adaptation field of a packetization made again.
        let needsFlag = !edited[Int(packet.pid)] && muxer?.startsDiscontinuity(packet.pid) == true && !packet.flagged
        edited[Int(packet.pid)] = true
        let payload = payloadStart..<scratch.count
        switch try edit(&scratch, payload, type) {
        case let .changed(ranges) where !needsFlag:
            TSPackets.writeBack(ranges, from: scratch, into: bytes, pieces: packet.pieces, base: base)
        case .changed:
            packet.remade = Remade(streamID: scratch[3], pts: pts, dts: dts, payload: Array(scratch[payload]))
        case let .remade(made):
            packet.remade = Remade(streamID: scratch[3], pts: pts, dts: dts, payload: made)
        }
        if packet.remade != nil { remadeCount += 1 }
        packet.done = true
        packets[id - firstPES] = packet
        if open[Int(packet.pid)] == id { open[Int(packet.pid)] = -1 }
    }

    /// Gives out the packets whose PES packets are done, in stored order: the new tables for the first PAT, stored
    /// packets with their counters written (runs of them as one range of `bytes`), a remade PES packet in place of
    /// its first packet.
    private mutating func drain(in bytes: UnsafeMutableRawBufferPointer, emit: (TSSegmentPart) -> Void) {
        guard var muxer else { return }
        self.muxer = nil  // the only copy while it writes
        defer { self.muxer = muxer }
        var run: Int?  // where a run of stored packets to give out starts in `bytes`
        func flush(_ at: Int) {
            if let start = run, start < at { emit(.stored(start..<at)) }
            run = nil
        }
        loop: while given < parsed {
            let at = (given - firstPacket) * TSMuxer.packetSize
            switch marks[given - firstPacket] {
            case .drop:
                flush(at)
            case .tables:
                flush(at)
                if !tablesWritten { emit(.made(muxer.tables())) }
                tablesWritten = true
            case let .media(id):
                // Fields read one by one: no copy of the PES packet's list of pieces for each transport packet.
                let index = id - firstPES
                guard index >= 0, index < packets.count, packets[index].done else { break loop }
                let pid = packets[index].pid
                if let remade = packets[index].remade {
                    flush(at)
                    if given == packets[index].first, var stream = muxer.streams.first(where: { $0.pid == pid }) {
                        stream.streamID = remade.streamID
                        var out: [UInt8] = []
                        muxer.pes(stream, pts: remade.pts, dts: remade.dts, payload: remade.payload, pcr: packets[index].pcr,
                                  randomAccess: packets[index].randomAccess, into: &out)
                        emit(.made(out))
                    }
                } else {
                    let (counter, discontinuity) = muxer.nextPacket(of: pid)
                    bytes[at + 3] = bytes[at + 3] & 0xF0 | counter
                    if discontinuity, packets[index].flagged, given == packets[index].first { bytes[at + 5] |= 0x80 }
                    if run == nil { run = at }
                }
            }
            given += 1
        }
        flush((given - firstPacket) * TSMuxer.packetSize)
        // PES packets given out whole are let go.
        var through = 0
        while through < packets.count, packets[through].done, packets[through].last < given { through += 1 }
        if through > 0 {
            packets.removeFirst(through)
            firstPES += through
        }
    }
}

/// Byte work on stored transport packets that needs nothing of the editor's state.
enum TSPackets {
    /// A PES header's 33-bit timestamp at `at`, when the header (ending at `headerEnd`) holds it.
    static func timestamp(_ bytes: [UInt8], at: Int, headerEnd: Int) -> Int64? {
        guard at + 5 <= headerEnd else { return nil }
        func b(_ index: Int) -> Int64 { Int64(bytes[at + index]) }
        return (b(0) >> 1 & 0x07) << 30 | b(1) << 22 | (b(2) >> 1) << 15 | b(3) << 7 | b(4) >> 1
    }

    /// Copies `ranges` (ascending) of a gathered PES packet (`source`) back to where its `pieces` are stored in
    /// `target` (which starts at segment offset `base`).
    static func writeBack(_ ranges: [Range<Int>], from source: [UInt8], into target: UnsafeMutableRawBufferPointer,
                          pieces: [(offset: Int, count: Int)], base: Int) {
        guard !ranges.isEmpty, let to = target.baseAddress else { return }
        source.withUnsafeBytes { source in
            guard let from = source.baseAddress else { return }
            var piece = 0, pieceStart = 0  // the piece holding gathered offset `pieceStart` on
            for range in ranges {
                if range.lowerBound < pieceStart { piece = 0; pieceStart = 0 }
                var low = range.lowerBound
                while low < range.upperBound {
                    while piece < pieces.count, pieceStart + pieces[piece].count <= low {
                        pieceStart += pieces[piece].count
                        piece += 1
                    }
                    guard piece < pieces.count else { return }
                    let high = min(range.upperBound, pieceStart + pieces[piece].count)
                    (to + (pieces[piece].offset - base + low - pieceStart)).copyMemory(from: from + low, byteCount: high - low)
                    low = high
                }
            }
        }
    }
}
