import SatchelBytes

/// Reads the PES packets of a transport stream as its bytes arrive, in pieces of any size: each PES packet is
/// given out once it is complete (the next one of its PID has started, or the stream has ended), in the order
/// the packets started. Only the PES packets not yet complete, and less than one transport packet of input, are
/// kept between pieces; the streams are those the PMTs seen so far declare.
package struct TSPESReader: Sendable {
    /// The elementary streams the PMTs declared so far (PID and stream type, in PMT order).
    package private(set) var streams: [(pid: UInt16, streamType: UInt8)] = []
    /// How many transport packets have been read.
    package private(set) var packetCount = 0

    private var pmtPID: UInt16?
    /// PES packets started and not yet given out, oldest first (`head` and on); a nil `pid` marks one given out.
    private var started: [Started] = []
    private var head = 0
    /// The index in `started` of the PES packet open on each PID.
    private var open: [UInt16: Int] = [:]
    /// The start of a transport packet cut by the end of the last piece.
    private var carry: [UInt8] = []

    private struct Started: Sendable {
        var pid: UInt16
        var randomAccess: Bool
        var pcr: Int64?
        var data: [UInt8]
        var complete: Bool
    }

    /// A reader at the start of a transport stream.
    package init() {}

    /// Reads `bytes` (the next piece of the stream) and returns the PES packets it completed.
    package mutating func read(_ bytes: ArraySlice<UInt8>) throws(MediaError) -> [TSDemuxer.PES] {
        var input = bytes
        if !carry.isEmpty {
            let wanted = TSMuxer.packetSize - carry.count
            carry += input.prefix(wanted)
            input = input.dropFirst(wanted)
            guard carry.count == TSMuxer.packetSize else { return [] }
            let packet = carry
            carry = []
            try readPacket(packet[...])
        }
        var offset = input.startIndex
        while input.endIndex - offset >= TSMuxer.packetSize {
            try readPacket(input[offset..<(offset + TSMuxer.packetSize)])
            offset += TSMuxer.packetSize
        }
        carry = Array(input[offset...])
        return try completed()
    }

    /// The end of the stream: every PES packet still open, in the order they started. A cut last transport
    /// packet is left out.
    package mutating func finish() throws(MediaError) -> [TSDemuxer.PES] {
        for index in started.indices { started[index].complete = true }
        open = [:]
        carry = []
        return try completed()
    }

    /// Reads one 188-byte transport packet.
    private mutating func readPacket(_ packet: ArraySlice<UInt8>) throws(MediaError) {
        let at = packet.startIndex
        guard packet[at] == 0x47 else { throw .malformed("MPEG-TS sync byte missing at offset \(packetCount * TSMuxer.packetSize)") }
        packetCount += 1
        let pusi = packet[at + 1] & 0x40 != 0
        let pid = UInt16(packet[at + 1] & 0x1F) << 8 | UInt16(packet[at + 2])
        let control = (packet[at + 3] >> 4) & 0x3
        var start = at + 4
        var randomAccess = false
        var pcr: Int64?
        if control & 0x2 != 0 {
            let length = Int(packet[at + 4])
            if length > 0 {
                let flags = packet[at + 5]
                randomAccess = flags & 0x40 != 0
                if flags & 0x10 != 0, length >= 7 {
                    let b = packet[(at + 6)..<(at + 11)].map(Int64.init)
                    pcr = b[0] << 25 | b[1] << 17 | b[2] << 9 | b[3] << 1 | b[4] >> 7
                }
            }
            start += 1 + length
        }
        guard control & 0x1 != 0, start < packet.endIndex else { return }
        let payload = packet[start...]
        if pid == 0, pusi {
            if let pmt = try TSDemuxer.parsePAT(payload) { pmtPID = pmt }
        } else if pid == pmtPID, pusi {
            for (streamPID, type) in try TSDemuxer.parsePMT(payload) where !streams.contains(where: { $0.pid == streamPID }) {
                streams.append((streamPID, type))
            }
        } else if streams.contains(where: { $0.pid == pid }) {
            if pusi {
                if let previous = open[pid] { started[previous].complete = true }
                open[pid] = started.count
                started.append(Started(pid: pid, randomAccess: randomAccess, pcr: pcr, data: Array(payload), complete: false))
            } else if let current = open[pid] {
                started[current].data.append(contentsOf: payload)
            }
        }
    }

    /// The complete PES packets at the front, parsed; the list is compacted once most of it has been given out.
    private mutating func completed() throws(MediaError) -> [TSDemuxer.PES] {
        var out: [TSDemuxer.PES] = []
        while head < started.count, started[head].complete {
            let entry = started[head]
            started[head].data = []
            head += 1
            var packet = try TSDemuxer.parsePES(entry.data)
            packet.pid = entry.pid
            packet.randomAccess = entry.randomAccess
            packet.pcr = entry.pcr
            out.append(packet)
        }
        if head > 32, head * 2 > started.count {
            started.removeFirst(head)
            open = open.mapValues { $0 - head }
            head = 0
        }
        return out
    }
}
