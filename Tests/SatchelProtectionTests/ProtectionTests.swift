import Foundation
import SatchelBytes
import SatchelMedia
import SatchelTestSupport
import Testing
@testable import SatchelProtection

/// Runs openssl as an independent implementation of the ciphers.
func openssl(_ arguments: [String], input: [UInt8]) throws -> [UInt8] {
    try TestMedia.require("openssl")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["openssl"] + arguments
    let inPipe = Pipe(), outPipe = Pipe()
    process.standardInput = inPipe
    process.standardOutput = outPipe
    try process.run()
    inPipe.fileHandleForWriting.write(Data(input))
    try inPipe.fileHandleForWriting.close()
    let out = outPipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return Array(out)
}

@Suite("Content protection")
struct ProtectionTests {
    let key = SecretBytes(Array(0x10..<0x20))
    let iv: [UInt8] = Array(0xA0..<0xB0)

    @Test("AES-128 segments match openssl and round-trip; a wrong key is a typed error")
    func segmentCipher() throws {
        let cipher = try SegmentCipher(key: key)
        for length in [0, 1, 15, 16, 17, 188 * 7, 10_000] {
            let plain = SecureRandom.bytes(length)
            let encrypted = try cipher.encrypt(plain, iv: iv)
            #expect(encrypted.count == (length / 16 + 1) * 16)
            let reference = try openssl(["enc", "-aes-128-cbc", "-K", Hex.encode(key.bytes), "-iv", Hex.encode(iv)], input: plain)
            #expect(encrypted == reference)
            #expect(try cipher.decrypt(encrypted, iv: iv) == plain)
        }
        let other = try SegmentCipher(key: SecretBytes(Array(repeating: 9, count: 16)))
        #expect(throws: ProtectionError.self) { try other.decrypt(try cipher.encrypt(SecureRandom.bytes(100), iv: iv), iv: iv) }
        #expect(SegmentCipher.sequenceIV(0x0102) == Array(repeating: 0, count: 14) + [1, 2])
    }

    @Test("SAMPLE-AES video NALs: leader clear, 1 block in 10 encrypted, emulation prevention applied, round trip exact")
    func sampleAESVideo() throws {
        let transform = try SampleAES(key: key, iv: iv)
        var random = SystemRandomNumberGenerator()
        for length in [10, 32, 48, 49, 64, 200, 1000, 5000] {
            for type: UInt8 in [1, 5, 6, 7] {
                // Slice data with many zero runs, so emulation prevention is exercised.
                var nal = [0x60 | type] + (1..<length).map { _ in UInt8.random(in: 0...3, using: &random) }
                nal = NALUnit.addEmulationPrevention(nal)
                let encrypted = try transform.encryptVideoNAL(nal)
                if type == 1 || type == 5 {
                    if nal.count <= 48 {
                        #expect(encrypted == nal, "a NAL of 48 bytes or fewer stays as it is")
                    } else {
                        // One level of emulation prevention comes off before the leader is compared.
                        #expect(Array(NALUnit.removeEmulationPrevention(encrypted).prefix(32)) == Array(nal.prefix(32)))
                    }
                    #expect(!containsStartCode(encrypted), "no start code emulation in the output")
                } else {
                    #expect(encrypted == nal, "non-slice NALs stay clear")
                }
                #expect(try transform.decryptVideoNAL(encrypted) == nal)
            }
        }
    }

    @Test("SAMPLE-AES audio frames: header and 16 bytes clear, whole blocks encrypted, trailer clear")
    func sampleAESAudio() throws {
        let transform = try SampleAES(key: key, iv: iv)
        for length in [7, 30, 39, 40, 100, 371] {
            let frame = SecureRandom.bytes(length)
            let encrypted = try transform.encryptAudioFrame(frame, headerLength: 7)
            #expect(Array(encrypted.prefix(23)) == Array(frame.prefix(23)))
            let blocks = max(length - 23, 0) / 16
            let trailer = min(23 + blocks * 16, length)
            #expect(Array(encrypted[trailer...]) == Array(frame[trailer...]))
            if blocks > 0 {
                let reference = try openssl(["enc", "-aes-128-cbc", "-nopad", "-K", Hex.encode(key.bytes), "-iv", Hex.encode(iv)],
                                            input: Array(frame[23..<(23 + blocks * 16)]))
                #expect(Array(encrypted[23..<(23 + blocks * 16)]) == reference)
            }
            #expect(try transform.decryptAudioFrame(encrypted, headerLength: 7) == frame)
        }
    }

    @Test("cenc: whole-sample CTR matches openssl, subsampled samples round-trip with clear ranges untouched")
    func cenc() throws {
        let transform = try CommonEncryption(scheme: .cenc, key: key, iv: iv)
        let sampleIV: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
        let plain = SecureRandom.bytes(1000)
        var whole = plain
        try transform.encrypt(&whole, subsamples: [], iv: sampleIV, isVideo: false)
        let reference = try openssl(["enc", "-aes-128-ctr", "-K", Hex.encode(key.bytes), "-iv", Hex.encode(sampleIV + Array(repeating: 0, count: 8))], input: plain)
        #expect(whole == reference)
        try transform.decrypt(&whole, subsamples: [], iv: sampleIV, isVideo: false)
        #expect(whole == plain)

        let subsamples = [Subsample(clear: 10, protected: 320), Subsample(clear: 70, protected: 600)]
        var split = plain
        try transform.encrypt(&split, subsamples: subsamples, iv: sampleIV, isVideo: true)
        #expect(Array(split[0..<10]) == Array(plain[0..<10]))
        #expect(Array(split[330..<400]) == Array(plain[330..<400]))
        // The keystream runs on across protected ranges.
        #expect(Array(split[10..<330]) + Array(split[400..<1000]) ==
                (try openssl(["enc", "-aes-128-ctr", "-K", Hex.encode(key.bytes), "-iv", Hex.encode(sampleIV + Array(repeating: 0, count: 8))],
                             input: Array(plain[10..<330]) + Array(plain[400..<1000]))))
        try transform.decrypt(&split, subsamples: subsamples, iv: sampleIV, isVideo: true)
        #expect(split == plain)
        #expect(throws: ProtectionError.self) {
            var short = plain
            try transform.encrypt(&short, subsamples: [Subsample(clear: 10, protected: 5000)], iv: sampleIV, isVideo: true)
        }
    }

    @Test("a sample encrypted where it lies in a segment equals the sample encrypted alone, for both schemes; the counter carries across ranges and bytes")
    func inPlace() throws {
        let plain = SecureRandom.bytes(1000)
        let segment = SecureRandom.bytes(300) + plain + SecureRandom.bytes(77)
        let maps: [[Subsample]] = [[], [Subsample(clear: 10, protected: 320), Subsample(clear: 70, protected: 600)],
                                   [Subsample(clear: 5, protected: 33), Subsample(clear: 2, protected: 960)]]  // 33: keystream runs on mid-block
        for scheme in [CommonEncryption.Scheme.cenc, .cbcs] {
            let transform = try CommonEncryption(scheme: scheme, key: key, iv: iv)
            for map in maps where scheme == .cenc || map.allSatisfy({ $0.protected % 16 == 0 }) {
                var alone = plain
                try transform.encrypt(&alone, subsamples: map, iv: [9, 8, 7, 6, 5, 4, 3, 2], isVideo: !map.isEmpty)
                var inSegment = segment
                try transform.encrypt(&inSegment, sampleAt: 300..<1300, subsamples: map, iv: [9, 8, 7, 6, 5, 4, 3, 2], isVideo: !map.isEmpty)
                #expect(Array(inSegment[300..<1300]) == alone, "\(scheme) \(map)")
                #expect(Array(inSegment[..<300]) == Array(segment[..<300]) && Array(inSegment[1300...]) == Array(segment[1300...]))
                var back = alone
                try transform.decrypt(&back, subsamples: map, iv: [9, 8, 7, 6, 5, 4, 3, 2], isVideo: !map.isEmpty)
                #expect(back == plain)
            }
            var outside = segment
            #expect(throws: ProtectionError.self) {
                try transform.encrypt(&outside, sampleAt: 1000..<1400, subsamples: [], iv: [1, 2, 3, 4, 5, 6, 7, 8], isVideo: false)
            }
        }
        // A 16-byte IV whose low bytes are about to wrap: the counter is one 128-bit number, as openssl counts it.
        let wrapping: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE]
        let transform = try CommonEncryption(scheme: .cenc, key: key, iv: iv)
        var split = plain
        try transform.encrypt(&split, subsamples: [Subsample(clear: 0, protected: 32), Subsample(clear: 8, protected: 960)], iv: wrapping, isVideo: true)
        let reference = try openssl(["enc", "-aes-128-ctr", "-K", Hex.encode(key.bytes), "-iv", Hex.encode(wrapping)],
                                    input: Array(plain[0..<32]) + Array(plain[40..<1000]))
        #expect(Array(split[0..<32]) + Array(split[40..<1000]) == reference)
        #expect(BlockCipher.advance([0, 0xFF, 0xFF], by: 1) == [1, 0, 0] && BlockCipher.advance([0xFF, 0xFF], by: 2) == [0, 1])
    }

    @Test("cbcs: 1:9 pattern for video, all whole blocks for audio, CBC restarting per subsample")
    func cbcs() throws {
        let transform = try CommonEncryption(scheme: .cbcs, key: key, iv: iv)
        let plain = SecureRandom.bytes(1000)
        var video = plain
        let subsamples = [Subsample(clear: 8, protected: 480), Subsample(clear: 12, protected: 496), Subsample(clear: 4, protected: 0)]
        try transform.encrypt(&video, subsamples: subsamples, iv: [], isVideo: true)
        for block in 0..<30 {
            let range = (8 + block * 16)..<(8 + block * 16 + 16)
            #expect((Array(video[range]) == Array(plain[range])) == (block % 10 != 0), "block \(block)")
        }
        let firstBlocks = Array(plain[8..<24]) + Array(plain[168..<184]) + Array(plain[328..<344])
        let reference = try openssl(["enc", "-aes-128-cbc", "-nopad", "-K", Hex.encode(key.bytes), "-iv", Hex.encode(iv)], input: firstBlocks)
        #expect(Array(video[8..<24]) + Array(video[168..<184]) + Array(video[328..<344]) == reference)
        try transform.decrypt(&video, subsamples: subsamples, iv: [], isVideo: true)
        #expect(video == plain)

        var audio = Array(plain.prefix(100))
        try transform.encrypt(&audio, subsamples: [], iv: [], isVideo: false)
        #expect(Array(audio[96..<100]) == Array(plain[96..<100]), "trailing partial block clear")
        #expect(Array(audio[0..<96]) != Array(plain[0..<96]))
        try transform.decrypt(&audio, subsamples: [], iv: [], isVideo: false)
        #expect(audio == Array(plain.prefix(100)))
    }

    @Test("video subsample maps cover the sample, protect whole blocks, and leave non-slice NALs clear")
    func subsampleMaps() throws {
        let sps = [UInt8](repeating: 0x67, count: 20), slice = [0x65] + SecureRandom.bytes(999), tiny = [0x41] + SecureRandom.bytes(20)
        let sample = NALUnit.lengthPrefixed([sps[...], slice[...], tiny[...]])
        let map = try CommonEncryption.videoSubsamples(sample[...], codec: .h264)
        #expect(map.reduce(0) { $0 + Int($1.clear) + Int($1.protected) } == sample.count)
        #expect(map.allSatisfy { $0.protected % 16 == 0 })
        #expect(map[0].clear >= UInt16(4 + 20 + 4 + 32), "SPS, length prefixes and slice leader are clear")
        #expect(map[0].protected == UInt32((1000 - 32) / 16 * 16))
        // A huge non-slice NAL splits the clear run at 65535.
        let big = NALUnit.lengthPrefixed([[UInt8](repeating: 6, count: 70_000)[...]])
        let bigMap = try CommonEncryption.videoSubsamples(big[...], codec: .h264)
        #expect(bigMap.reduce(0) { $0 + Int($1.clear) } == big.count && bigMap.count == 2)
        #expect(throws: ProtectionError.self) { try CommonEncryption.videoSubsamples([0, 0, 9, 9, 1][...], codec: .h264) }
    }

    @Test("Clear Key requests and responses use base64url without padding")
    func clearKey() throws {
        let kid = try KeyID(hex: "00112233445566778899aabbccddeeff")
        let request = try ClearKey.Request(json: Array(#"{"kids":["ABEiM0RVZneImaq7zN3u_w"],"type":"persistent-license"}"#.utf8))
        #expect(request.keyIDs == [kid] && request.type == "persistent-license")
        #expect(try ClearKey.Request(json: request.json) == request)
        let response = ClearKey.response(keys: [(kid, key)], type: "temporary")
        #expect(!String(decoding: response, as: UTF8.self).contains("="))
        let parsed = try ClearKey.parseResponse(response)
        #expect(parsed.first?.keyID == kid && parsed.first?.key == key)
        for bad in [#"{}"#, #"{"kids":[]}"#, #"{"kids":["AAAA"]}"#, #"{"kids":["ABEiM0RVZneImaq7zN3u_w"],"type":"x"}"#, "nope"] {
            #expect(throws: ProtectionError.self) { try ClearKey.Request(json: Array(bad.utf8)) }
        }
        #expect(kid.uuidString == "00112233-4455-6677-8899-aabbccddeeff")
    }

    @Test("pssh boxes round-trip with their key IDs")
    func pssh() throws {
        let kids = [KeyID.random(), KeyID.random()]
        let box = PSSH.box(keyIDs: kids)
        let parsed = try PSSH.parse(box)
        #expect(parsed.systemID == PSSH.commonSystemID && parsed.keyIDs == kids && parsed.data.isEmpty)
        #expect(throws: ProtectionError.self) { try PSSH.parse(Array(box.prefix(30))) }
    }

    func containsStartCode(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 3 else { return false }
        for index in 0..<(bytes.count - 2) where bytes[index] == 0 && bytes[index + 1] == 0 && bytes[index + 2] <= 2 { return true }
        return false
    }
}
