import SatchelBytes
import SatchelMedia
import SatchelProtection
import Testing

/// Issue "no ciphertext ever handed to a player as media": the last look at what the proxy made clear names any
/// protection left in the box structure, and nothing in clear output or in media bytes.
@Suite("The clear output check")
struct ClearOutputCheckTests {
    static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        let size = UInt32(8 + payload.count)
        return [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)] + Array(type.utf8) + payload
    }

    /// An init segment whose one sample entry is `entry` (with `inner` boxes after a 78-byte visual header).
    static func initSegment(entry: String, inner: [UInt8]) -> [UInt8] {
        let sampleEntry = box(entry, [UInt8](repeating: 0, count: 78) + inner)
        let stsd = box("stsd", [0, 0, 0, 0, 0, 0, 0, 1] + sampleEntry)
        return box("ftyp", Array("isom".utf8) + [0, 0, 0, 0])
            + box("moov", box("trak", box("mdia", box("minf", box("stbl", stsd)))))
    }

    @Test("protected sample entries, their sinf, a fragment's senc and PIFF's sample encryption box are named; a clear init segment, a clear fragment and media bytes name nothing")
    func names() {
        let sinf = Self.box("sinf", Self.box("frma", Array("avc1".utf8)))
        #expect(ClearOutputCheck.protection(inFMP4: Self.initSegment(entry: "encv", inner: sinf)) == ["moov/trak/mdia/minf/stbl/stsd/encv"])
        #expect(ClearOutputCheck.protection(inFMP4: Self.initSegment(entry: "enca", inner: [])) == ["moov/trak/mdia/minf/stbl/stsd/enca"])
        #expect(ClearOutputCheck.protection(inFMP4: Self.initSegment(entry: "avc1", inner: Self.box("avcC", [1, 2, 3]))).isEmpty)

        let clearFragment = Self.box("moof", Self.box("mfhd", [0, 0, 0, 0, 0, 0, 0, 1]) + Self.box("traf", Self.box("tfhd", [0, 0, 0, 0, 0, 0, 0, 1])))
            + Self.box("mdat", Array("sencsinfencv".utf8) + SecureRandom.bytes(4096))
        #expect(ClearOutputCheck.protection(inFMP4: clearFragment).isEmpty, "media bytes are never read")
        let senc = Self.box("moof", Self.box("traf", Self.box("tfhd", [0, 0, 0, 0, 0, 0, 0, 1]) + Self.box("senc", [0, 0, 0, 0, 0, 0, 0, 0])))
        #expect(ClearOutputCheck.protection(inFMP4: senc) == ["moof/traf/senc"])
        let piffID: [UInt8] = [0xA2, 0x39, 0x4F, 0x52, 0x5A, 0x9B, 0x4F, 0x14, 0xA2, 0x44, 0x6C, 0x42, 0x7C, 0x64, 0x8D, 0xF4]
        let piff = Self.box("moof", Self.box("traf", Self.box("uuid", piffID + [0, 0, 0, 0, 0, 0, 0, 0])))
        #expect(ClearOutputCheck.protection(inFMP4: piff) == ["moof/traf/uuid (PIFF sample encryption)"])
        #expect(ClearOutputCheck.protection(inFMP4: SecureRandom.bytes(1000)).isEmpty, "bytes that are not boxes name nothing")
    }

    @Test("MPEG-TS: SAMPLE-AES stream types (H.264, AAC, AC-3, E-AC-3) and a stream marked encrypted by its private data indicator are named by PID; clear stream types, bytes that are not a transport stream and a stream with no program map name nothing")
    func transportStreams() {
        func tables(_ streams: [TSStream]) -> [UInt8] {
            var muxer = TSMuxer(streams: streams)
            return muxer.tables()
        }
        let sampleAES = tables([TSStream(pid: 0x100, streamID: 0xE0, streamType: 0xDB), TSStream(pid: 0x101, streamID: 0xC0, streamType: 0xCF),
                                TSStream(pid: 0x102, streamID: 0xBD, streamType: 0xC1), TSStream(pid: 0x103, streamID: 0xBD, streamType: 0xC2)])
        #expect(ClearOutputCheck.protection(inTS: sampleAES) == ["PID 256: stream type 0xDB (SAMPLE-AES H.264)", "PID 257: stream type 0xCF (SAMPLE-AES AAC)",
                                                                 "PID 258: stream type 0xC1 (SAMPLE-AES AC-3)", "PID 259: stream type 0xC2 (SAMPLE-AES E-AC-3)"])
        let marked = tables([TSStream(pid: 0x100, streamID: 0xE0, streamType: 0x1B),
                             TSStream(pid: 0x101, streamID: 0xC0, streamType: 0x0F, descriptors: [0x0F, 4] + Array("aacd".utf8))])
        #expect(ClearOutputCheck.protection(inTS: marked) == ["PID 257: stream type 0xF marked aacd"])
        #expect(ClearOutputCheck.protection(inTS: tables([.h264, .aac])).isEmpty)
        let noTables = [UInt8](repeating: 0x47, count: 1) + [UInt8](repeating: 0xFF, count: 187)
        #expect(ClearOutputCheck.protection(inTS: noTables).isEmpty, "no program map: nothing to name")
        #expect(ClearOutputCheck.protection(inTS: Self.initSegment(entry: "encv", inner: [])).isEmpty, "an MP4 is not a transport stream")
    }
}
