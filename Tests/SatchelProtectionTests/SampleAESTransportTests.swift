import SatchelBytes
import SatchelMedia
import SatchelTestSupport
import Testing
@testable import SatchelProtection

/// SAMPLE-AES MPEG-TS made clear where it lies (TSPESEditor): stored packets go on with their counters rewritten,
/// and only a PES packet whose clear length differs, or that needs a seek's discontinuity indicator it has no room
/// for, is packetized again.
@Suite("SAMPLE-AES transport streams made clear in place")
struct SampleAESTransportTests {
    let key = SecretBytes(Array(0x10..<0x20))
    let iv: [UInt8] = Array(0xA0..<0xB0)
    static let video: UInt16 = 0x100, audio: UInt16 = 0x101

    /// An ADTS frame (AAC LC, 44.1 kHz, stereo) of `length` bytes, header included.
    static func adtsFrame(_ length: Int, _ random: inout some RandomNumberGenerator) -> [UInt8] {
        [0xFF, 0xF1, 0x50, 0x80 | UInt8(length >> 11 & 0x3), UInt8(length >> 3 & 0xFF), UInt8((length & 0x7) << 5 | 0x1F), 0xFC]
            + (7..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
    }

    /// A slice NAL of `length` bytes: with no zero byte (no emulation prevention), or with zero runs (some).
    static func slice(_ type: UInt8, _ length: Int, zeros: Bool, _ random: inout some RandomNumberGenerator) -> [UInt8] {
        let body = (1..<length).map { _ in zeros ? UInt8.random(in: 0...3, using: &random) : UInt8.random(in: 1...255, using: &random) }
        return NALUnit.addEmulationPrevention([0x60 | type] + body)
    }

    /// The same access units and audio frames as a clear and as a SAMPLE-AES transport stream.
    func segments(zeros: Bool) throws -> (clear: [UInt8], protected: [UInt8]) {
        var random = SplitMix64(seed: zeros ? 7 : 3)
        let transform = try SampleAES(key: key, iv: iv)
        let start: [UInt8] = [0, 0, 0, 1]
        var units: [[[UInt8]]] = []
        for index in 0..<4 {
            units.append([[0x09, 0xF0], Self.slice(index == 0 ? 5 : 1, 3000 + index * 777, zeros: zeros && index == 2, &random),
                          Self.slice(1, 400, zeros: false, &random)])
        }
        let frames = (0..<6).map { Self.adtsFrame(200 + $0 * 37, &random) }
        func mux(_ protected: Bool) throws -> [UInt8] {
            var muxer = TSMuxer(streams: [TSStream(pid: Self.video, streamID: 0xE0, streamType: protected ? 0xDB : 0x1B),
                                          TSStream(pid: Self.audio, streamID: 0xC0, streamType: protected ? 0xCF : 0x0F)])
            var out = muxer.tables()
            for (index, nals) in units.enumerated() {
                let payload = try nals.flatMap { nal in start + (protected ? try transform.encryptVideoNAL(nal) : nal) }
                muxer.pes(muxer.streams[0], pts: Int64(index) * 3000 + 3000, dts: Int64(index) * 3000, payload: payload,
                          pcr: Int64(index) * 3000, randomAccess: index == 0, into: &out)
                let audio = try frames[(index * 3 / 2)..<min(frames.count, index * 3 / 2 + 2)].flatMap { frame in
                    protected ? try transform.encryptAudioFrame(frame, headerLength: 7) : frame
                }
                if !audio.isEmpty { muxer.pes(muxer.streams[1], pts: Int64(index) * 3000, dts: nil, payload: audio, into: &out) }
            }
            return out
        }
        return (try mux(false), try mux(true))
    }

    /// Each PID's PES payloads, in order.
    static func payloads(_ stream: [UInt8]) throws -> [UInt16: [[UInt8]]] {
        var reader = TSPESReader()
        let packets = try reader.read(stream[...]) + reader.finish()
        return Dictionary(grouping: packets, by: \.pid).mapValues { $0.map(\.payload) }
    }

    /// Each PID's continuity counters, and whether its first packet says "discontinuity".
    static func counters(_ stream: [UInt8]) -> [UInt16: (counters: [UInt8], firstDiscontinuous: Bool)] {
        var out: [UInt16: (counters: [UInt8], firstDiscontinuous: Bool)] = [:]
        for at in stride(from: 0, to: stream.count, by: 188) {
            let pid = UInt16(stream[at + 1] & 0x1F) << 8 | UInt16(stream[at + 2])
            let flagged = stream[at + 3] & 0x20 != 0 && stream[at + 4] > 0 && stream[at + 5] & 0x80 != 0
            if out[pid] == nil { out[pid] = ([], flagged) }
            out[pid]?.counters.append(stream[at + 3] & 0x0F)
        }
        return out
    }

    @Test("slices without emulation prevention and AAC frames are made clear where they lie: the stored packets go on, nothing is packetized again, the payloads are the clear stream's")
    func inPlace() throws {
        let (clear, protected) = try segments(zeros: false)
        var transport = try SampleAESTransport(key: key, iv: iv)
        var made: [UInt8] = []
        for start in stride(from: 0, to: protected.count, by: 1000) { made += try transport.clear(protected[start..<min(start + 1000, protected.count)]) }
        made += try transport.finish()
        #expect(transport.remadeCount == 0)
        #expect(made.count == protected.count, "packet for packet")
        #expect(try Self.payloads(made)[Self.video] == Self.payloads(clear)[Self.video])
        #expect(try Self.payloads(made)[Self.audio] == Self.payloads(clear)[Self.audio])
        #expect(try TSDemuxer.programStreams(made).map(\.streamType) == [0x1B, 0x0F])
        // Media packets differ from the stored ones only in the bytes decrypted (the headers are the stored ones).
        for at in stride(from: 2 * 188, to: made.count, by: 188) { #expect(made[at..<(at + 4)] == protected[at..<(at + 4)]) }
    }

    @Test("a slice whose protected form holds emulation prevention bytes is longer than its clear form: its PES packet is packetized again, the payloads are still the clear stream's")
    func remade() throws {
        let (clear, protected) = try segments(zeros: true)
        var transport = try SampleAESTransport(key: key, iv: iv)
        let made = try transport.clear(protected[...]) + transport.finish()
        #expect(transport.remadeCount == 1)
        #expect(try Self.payloads(made)[Self.video] == Self.payloads(clear)[Self.video])
        #expect(try Self.payloads(made)[Self.audio] == Self.payloads(clear)[Self.audio])
        #expect(made.count < protected.count)
        for (pid, entry) in Self.counters(made) {
            #expect(entry.counters == entry.counters.indices.map { UInt8($0 & 0xF) }, "PID \(pid): counters from 0, one by one")
        }
    }

    @Test("counters go on from the previous segment; after a seek each PID's first packet says discontinuity, in its own adaptation field or, an audio packet with none, packetized again")
    func continuity() throws {
        let (_, protected) = try segments(zeros: false)
        var first = try SampleAESTransport(key: key, iv: iv, continuity: TSContinuity(discontinuity: true))
        let one = try first.clear(protected[...]) + first.finish()
        #expect(first.remadeCount == 1, "the first audio PES packet has no adaptation field")
        let counted = Self.counters(one)
        for pid in [0, TSMuxer.pmtPID, Self.video, Self.audio] { #expect(counted[pid]?.firstDiscontinuous == true, "PID \(pid)") }
        var second = try SampleAESTransport(key: key, iv: iv, continuity: first.continuity)
        let two = try second.clear(protected[...]) + second.finish()
        #expect(second.remadeCount == 0)
        for (pid, entry) in Self.counters(two) {
            let last = try #require(counted[pid]?.counters.last)
            #expect(entry.counters.first == (last + 1) & 0xF, "PID \(pid) goes on")
            #expect(!entry.firstDiscontinuous)
        }
    }

    @Test("a whole segment made clear where it was read gives the streamed bytes exactly (in place, packetized again, after a seek); in place, all but the new tables are stretches of the stored segment; an editor is for one segment")
    func wholeSegment() throws {
        for (zeros, continuity) in [(false, TSContinuity()), (true, TSContinuity()), (false, TSContinuity(discontinuity: true))] {
            let (_, protected) = try segments(zeros: zeros)
            var streamed = try SampleAESTransport(key: key, iv: iv, continuity: continuity)
            var expected: [UInt8] = []
            for start in stride(from: 0, to: protected.count, by: 1000) {
                expected += try streamed.clear(protected[start..<min(start + 1000, protected.count)])
            }
            expected += try streamed.finish()
            var whole = try SampleAESTransport(key: key, iv: iv, continuity: continuity)
            var segment = protected
            var parts: [TSSegmentPart] = [], made: [UInt8] = []
            try segment.withUnsafeMutableBytes { bytes in
                parts = try whole.clear(segment: bytes)
                for part in parts {
                    switch part {
                    case let .stored(range): made += UnsafeRawBufferPointer(rebasing: bytes[range])
                    case let .made(bytes): made += bytes
                    }
                }
                #expect(throws: ProtectionError.self, "a second segment needs a new editor") { try whole.clear(segment: bytes) }
            }
            #expect(made == expected, "zeros \(zeros), seek \(continuity.discontinuity)")
            #expect(whole.continuity == streamed.continuity && whole.remadeCount == streamed.remadeCount)
            if !zeros, !continuity.discontinuity {
                #expect(parts.count == 2 && parts.first == .made(Array(expected.prefix(2 * 188))), "the tables made, then one stretch of the stored segment")
            }
        }
    }

    @Test("malformed input is a clear error: no sync byte, an adaptation field longer than its packet, a PES packet with no timestamp, an AC-3 PES without a syncframe")
    func malformed() throws {
        let (_, protected) = try segments(zeros: false)
        var noSync = protected
        noSync[188 * 3] = 0
        #expect(throws: ProtectionError.self) { try SampleAESTransport.decrypt(noSync, key: key, iv: iv) }
        var longField = protected
        let at = try #require(stride(from: 2 * 188, to: longField.count, by: 188).first { longField[$0 + 3] & 0x20 != 0 })
        longField[at + 4] = 200
        #expect(throws: ProtectionError.self) { try SampleAESTransport.decrypt(longField, key: key, iv: iv) }
        var muxer = TSMuxer(streams: [TSStream(pid: Self.video, streamID: 0xE0, streamType: 0xDB)])
        var untimed = muxer.tables()
        muxer.pes(muxer.streams[0], pts: 0, dts: nil, payload: [0, 0, 1, 0x09, 0xF0], into: &untimed)
        let pes = try #require((2 * 188..<(untimed.count - 8)).first { untimed[$0..<($0 + 4)] == [0, 0, 1, 0xE0] })
        untimed[pes + 7] &= 0x3F  // PTS_DTS_flags off
        #expect(throws: ProtectionError.self) { try SampleAESTransport.decrypt(untimed, key: key, iv: iv) }
        // An AC-3 stream whose PES holds no syncframe.
        var ac3 = TSMuxer(streams: [TSStream(pid: Self.audio, streamID: 0xBD, streamType: 0xC1)])
        var garbage = ac3.tables()
        ac3.pes(ac3.streams[0], pts: 0, dts: nil, payload: Array(repeating: 0x55, count: 300), into: &garbage)
        #expect(throws: ProtectionError.self) { try SampleAESTransport.decrypt(garbage, key: key, iv: iv) }
    }

    /// Syncframes of `length` bytes: an AC-3 header (48 kHz, 32 kbit/s: 128 bytes) or an E-AC-3 one (`frmsiz` 63:
    /// 128 bytes), then counting bytes.
    static func dolbyFrames(eac3: Bool, count: Int) -> [UInt8] {
        (0..<count).flatMap { index -> [UInt8] in
            let header: [UInt8] = eac3 ? [0x0B, 0x77, 0x00, 0x3F, 0x00, 0x80] : [0x0B, 0x77, 0x12, 0x34, 0x00, 0x40]
            return header + (6..<128).map { UInt8(truncatingIfNeeded: $0 &+ index) }
        }
    }

    @Test("AC-3 and E-AC-3 SAMPLE-AES: each syncframe's first 16 bytes clear and its whole blocks encrypted; made clear by the proxy's transform (stream types 0x81 / 0x87, the frames as they were); frame lengths from the headers, hostile headers refused")
    func dolby() throws {
        let transform = try SampleAES(key: key, iv: iv)
        for (eac3, protectedType, clearType) in [(false, UInt8(0xC1), UInt8(0x81)), (true, 0xC2, 0x87)] {
            let clear = Self.dolbyFrames(eac3: eac3, count: 3)
            let frames = try AC3Syncframe.frames(in: clear[...])
            #expect(frames == [0..<128, 128..<256, 256..<384])
            let encrypted = try frames.flatMap { try transform.encryptAudioFrame(Array(clear[$0]), headerLength: 0) }
            #expect(encrypted[0..<16] == clear[0..<16] && encrypted[16..<128] != clear[16..<128], "16 bytes clear, then 7 blocks encrypted")
            var muxer = TSMuxer(streams: [TSStream(pid: Self.audio, streamID: 0xBD, streamType: protectedType)])
            var segment = muxer.tables()
            muxer.pes(muxer.streams[0], pts: 900, dts: nil, payload: encrypted, into: &segment)
            let decrypted = try SampleAESTransport.decrypt(segment, key: key, iv: iv)
            let (streams, pes) = try TSDemuxer.packets(decrypted)
            #expect(streams.map(\.streamType) == [clearType])
            #expect(pes.first.map { Array($0.payload) } == clear, "eac3 \(eac3): the frames as they were")
        }
        // 44.1 kHz frames of an odd size code carry one more word; 32 kHz ones are longer.
        #expect(try AC3Syncframe.length(of: [0x0B, 0x77, 0, 0, 0x41, 0x40][...]) == 140 && AC3Syncframe.length(of: [0x0B, 0x77, 0, 0, 0x40, 0x40][...]) == 138)
        #expect(try AC3Syncframe.length(of: [0x0B, 0x77, 0, 0, 0x80, 0x40][...]) == 192)
        for (label, bytes) in [("no sync word", [0x0B, 0x78, 0, 0, 0, 0x40]), ("reserved rate", [0x0B, 0x77, 0, 0, 0xC0, 0x40]),
                               ("reserved size", [0x0B, 0x77, 0, 0, 0x3F, 0x40]), ("bsid 20", [0x0B, 0x77, 0, 0, 0, 0xA0]), ("cut", [0x0B, 0x77])] as [(String, [UInt8])] {
            #expect(throws: MediaError.self, "\(label)") { try AC3Syncframe.length(of: bytes[...]) }
        }
        #expect(throws: MediaError.self, "a frame past the data") { try AC3Syncframe.frames(in: Self.dolbyFrames(eac3: false, count: 2).dropLast()) }
    }
}
