import Foundation
import SatchelBytes
import SatchelMedia
import SatchelPackager
import SatchelProtection
import SatchelTestSupport
import Testing

/// Packages made from ffmpeg-generated media, checked with ffmpeg, Python's m3u8/mpegdash and Satchel's own decryptors.
@Suite("Packager", .serialized)
struct PackagerTests {
    static let key = "00112233445566778899aabbccddeeff"
    static let keyID = "0123456789abcdef0123456789abcdef"
    static let iv = "0f0e0d0c0b0a09080706050403020100"

    static func contentKey() throws -> ContentKey {
        try ContentKey(keyID: KeyID(hex: keyID), key: SecretBytes(hex: key, count: 16), iv: Hex.decode(iv, count: 16))
    }

    /// The source (6 s, keyframe every 2 s) and a key file for identity / AES-128 key URIs.
    static func fixture() throws -> (input: String, keyFile: String) {
        let input = try TestMedia.make("packager-source", seconds: 9)
        let keyFile = TestMedia.directory.appendingPathComponent("content.key")
        if !FileManager.default.fileExists(atPath: keyFile.path) {
            try Data(try Hex.decode(key)).write(to: keyFile)
        }
        return (input.path, keyFile.path)
    }

    static func package(_ format: PackageFormat, _ scheme: PackageScheme, inputs: [String]? = nil, keyURI: String? = nil,
                        fairPlay: String? = nil, rotation: Int? = nil, label: String = "") throws -> URL {
        let (input, keyFile) = try fixture()
        let out = try TestMedia.temporaryDirectory("pkg-\(format.rawValue)-\(scheme.rawValue)\(label)").appendingPathComponent("out")
        let options = PackageOptions(inputs: inputs ?? [input], output: out.path, format: format, scheme: scheme,
                                     key: scheme == .clear ? nil : try contentKey(), keyURI: keyURI ?? keyFile, fairPlayURI: fairPlay,
                                     segmentDuration: 4, keyRotationSegments: rotation)
        _ = try Packager(options: options).run()
        return out
    }

    static let matrix: [(PackageFormat, PackageScheme)] = [(.hlsTS, .aes128), (.hlsTS, .sampleAES), (.cmaf, .cbcs), (.cmaf, .cenc)]

    @Test("every format × scheme decodes in ffmpeg to the same packets as the clear package", arguments: 0..<4)
    func ffmpegMatchesClear(_ index: Int) async throws {
        try await TestMedia.offloaded {
            let (format, scheme) = Self.matrix[index]
            let clear = try Self.package(format, .clear)
            let protected = try Self.package(format, scheme)
            let source = try TestMedia.packetCounts(URL(fileURLWithPath: try Self.fixture().input))
            for rendition in ["video_0", "audio_0"] {
                let expected = try TestMedia.packetHashes(clear.appendingPathComponent("\(rendition)/index.m3u8").path)
                let actual = try TestMedia.packetHashes(protected.appendingPathComponent("\(rendition)/index.m3u8").path)
                #expect(expected.count == source[rendition.hasPrefix("video") ? "video" : "audio"], "\(rendition): packet count equals the source")
                #expect(actual.count == expected.count)
                if scheme == .sampleAES && rendition == "video_0" {
                    // ffmpeg 5.1 leaves the last 2 video packets of the final SAMPLE-AES segment encrypted (conformance README).
                    #expect(Array(actual.dropLast(2)) == Array(expected.dropLast(2)))
                } else {
                    #expect(actual == expected, "\(format.rawValue) \(scheme.rawValue) \(rendition)")
                }
                if format == .cmaf {
                    // The segments alone, concatenated after the init segment, decrypt with the key.
                    let dir = protected.appendingPathComponent(rendition)
                    let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".m4s") }
                        .sorted { Int($0.dropFirst(8).dropLast(4)) ?? 0 < Int($1.dropFirst(8).dropLast(4)) ?? 0 }
                    var joined = try TestMedia.bytes(dir.appendingPathComponent("init.mp4"))
                    for file in files { joined += try TestMedia.bytes(dir.appendingPathComponent(file)) }
                    let joinedFile = dir.deletingLastPathComponent().appendingPathComponent("\(rendition)-joined.mp4")
                    try Data(joined).write(to: joinedFile)
                    #expect(try TestMedia.packetHashes(joinedFile.path, extra: ["-fflags", "+ignidx", "-decryption_key", Self.key]) == expected)
                }
            }
            let durations = try HLSMediaPlaylist(parsing: String(contentsOf: protected.appendingPathComponent("video_0/index.m3u8"), encoding: .utf8))
                .segments.reduce(0) { $0 + $1.duration }
            #expect(abs(durations - 9) < 0.05, "EXTINF durations add up to the source duration")
        }
    }

    @Test("Satchel's own decryptors turn every encrypted segment back into the clear package's bytes", arguments: 0..<4)
    func ownDecryptors(_ index: Int) async throws {
        try await TestMedia.offloaded {
            let (format, scheme) = Self.matrix[index]
            let clear = try Self.package(format, .clear, label: "-own")
            let protected = try Self.package(format, scheme, label: "-own")
            let key = try Self.contentKey()
            for rendition in ["video_0", "audio_0"] {
                let dir = protected.appendingPathComponent(rendition), clearDir = clear.appendingPathComponent(rendition)
                let segments = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix("segment_") }
                #expect(!segments.isEmpty)
                for name in segments {
                    let encrypted = try TestMedia.bytes(dir.appendingPathComponent(name))
                    let expected = try TestMedia.bytes(clearDir.appendingPathComponent(name))
                    switch scheme {
                    case .aes128:
                        #expect(try SegmentCipher(key: key.key).decrypt(encrypted, iv: key.iv) == expected)
                    case .sampleAES:
                        let transform = try SampleAES(key: key.key, iv: key.iv)
                        let tracks = try TSDemuxer.demux(encrypted, allowSampleAES: true)
                        let clearTracks = try TSDemuxer.demux(expected)
                        for (track, clearTrack) in zip(tracks, clearTracks) {
                            for (sample, clearSample) in zip(track.samples, clearTrack.samples) {
                                let decrypted: [UInt8]
                                if track.kind == .video {
                                    let units = try NALUnit.splitLengthPrefixed(sample.data).map { try transform.decryptVideoNAL($0)[...] }
                                    decrypted = NALUnit.lengthPrefixed(units)
                                } else {
                                    decrypted = try transform.decryptAudioFrame(Array(sample.data), headerLength: 0)
                                }
                                #expect(decrypted == Array(clearSample.data))
                            }
                        }
                    case .cbcs, .cenc:
                        let decryptor = try FMP4Decryptor(initSegment: try TestMedia.bytes(dir.appendingPathComponent("init.mp4")))
                        #expect(decryptor.keyID == key.keyID)
                        let decrypted = try decryptor.decrypt(segment: encrypted, key: key.key)
                        #expect(mdat(decrypted) == mdat(expected), "\(rendition)/\(name)")
                        #expect(mdat(encrypted) != mdat(expected))
                        // Made clear (protection boxes gone, offsets moved): the clear package's segment byte for byte.
                        #expect(try decryptor.clearSegment(encrypted, key: key.key) == expected, "\(rendition)/\(name)")
                        if scheme == .cenc {
                            // The same fragment with PIFF's sample encryption box (Smooth Streaming) in place of 'senc'.
                            let piff = try PIFFFixtures.piff(encrypted)
                            #expect(piff.count == encrypted.count + 16)
                            #expect(try decryptor.clearSegment(piff, key: key.key) == expected, "PIFF \(rendition)/\(name)")
                        }
                    case .clear:
                        break
                    }
                }
            }
        }
    }

    @Test("SAMPLE-AES MPEG-TS is made clear as it arrives: pieces of any size give the bytes of the whole, output starts before the input ends, and the samples and clear stream types are the clear package's")
    func sampleAESStreamed() async throws {
        try await TestMedia.offloaded {
            let clear = try Self.package(.hlsTS, .clear, label: "-stream")
            let protected = try Self.package(.hlsTS, .sampleAES, label: "-stream")
            let key = try Self.contentKey()
            for rendition in ["video_0", "audio_0"] {
                let dir = protected.appendingPathComponent(rendition)
                let names = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix("segment_") }.sorted()
                #expect(names.count > 1)
                for name in names {
                    let encrypted = try TestMedia.bytes(dir.appendingPathComponent(name))
                    let whole = try SampleAESTransport.decrypt(encrypted, key: key.key, iv: key.iv)
                    let expected = try TSDemuxer.demux(try TestMedia.bytes(clear.appendingPathComponent(rendition).appendingPathComponent(name)))
                    let made = try TSDemuxer.demux(whole)
                    #expect(made.map { $0.samples.map { Array($0.data) } } == expected.map { $0.samples.map { Array($0.data) } }, "\(rendition)/\(name)")
                    #expect(made.map { $0.samples.map(\.dts) } == expected.map { $0.samples.map(\.dts) })
                    #expect(try TSDemuxer.programStreams(whole).map(\.streamType) == [rendition == "video_0" ? 0x1B : 0x0F])
                    // 1,000-byte pieces (transport packets cut anywhere): the same bytes, and clear bytes before the end.
                    var transport = try SampleAESTransport(key: key.key, iv: key.iv)
                    var streamed: [UInt8] = []
                    var beforeHalf = 0
                    for start in stride(from: 0, to: encrypted.count, by: 1000) {
                        streamed += try transport.clear(encrypted[start..<min(start + 1000, encrypted.count)])
                        if start + 1000 <= encrypted.count / 2 { beforeHalf = streamed.count }
                    }
                    streamed += try transport.finish()
                    #expect(streamed == whole, "\(rendition)/\(name)")
                    #expect(beforeHalf > 0, "\(rendition)/\(name): nothing came out of the first half")
                }
            }
            // A PES packet whose start code is damaged: a clear error, never a trap.
            let name = try #require(try FileManager.default.contentsOfDirectory(atPath: protected.appendingPathComponent("video_0").path)
                .first { $0.hasPrefix("segment_") })
            var damaged = try TestMedia.bytes(protected.appendingPathComponent("video_0").appendingPathComponent(name))
            if let at = (0..<(damaged.count / 188)).map({ $0 * 188 }).first(where: { damaged[$0 + 1] & 0x40 != 0 && damaged[$0 + 2] == 0x00 && damaged[$0 + 1] & 0x1F == 1 }) {
                let adaptation = damaged[at + 3] >> 4 & 0x2 != 0 ? 1 + Int(damaged[at + 4]) : 0
                damaged[at + 4 + adaptation] = 0xFF  // the PES start code's first byte
            }
            #expect(throws: ProtectionError.self) { try SampleAESTransport.decrypt(damaged, key: key.key, iv: key.iv) }
        }
    }

    @Test("A cenc / cbcs segment of several fragments is made clear fragment by fragment, in stretches of whole samples",
          arguments: [PackageScheme.cbcs, .cenc])
    func clearPlan(_ scheme: PackageScheme) async throws {
        try await TestMedia.offloaded {
            let clear = try Self.package(.cmaf, .clear, label: "-plan")
            let protected = try Self.package(.cmaf, scheme, label: "-plan")
            let key = try Self.contentKey()
            for rendition in ["video_0", "audio_0"] {
                let dir = protected.appendingPathComponent(rendition)
                let names = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix("segment_") }.sorted()
                // Every segment one after the other: one stored segment of several fragments.
                var joined: [UInt8] = [], expected: [UInt8] = []
                for name in names {
                    joined += try TestMedia.bytes(dir.appendingPathComponent(name))
                    expected += try TestMedia.bytes(clear.appendingPathComponent(rendition).appendingPathComponent(name))
                }
                let decryptor = try FMP4Decryptor(initSegment: try TestMedia.bytes(dir.appendingPathComponent("init.mp4")))
                var reads: [Range<Int64>] = []
                let plan = try FMP4ClearPlan(size: Int64(joined.count), decryptor: decryptor, chunk: 4096) { (offset, count) throws(ProtectionError) -> [UInt8] in
                    reads.append(offset..<(offset + Int64(count)))
                    return Array(joined[Int(offset)..<(Int(offset) + count)])
                }
                // Only box headers and 'moof' boxes are read to make the plan; the media data is not.
                #expect(reads.reduce(0) { $0 + $1.count } < joined.count / 10, "\(rendition)")
                #expect(plan.size == Int64(expected.count))
                var made = 0, stretches = 0
                for part in plan.parts {
                    switch part {
                    case .made: made += 1
                    case let .decrypted(range, samples):
                        #expect(!samples.isEmpty)
                        let lastSample: Int64 = samples.last.map { Int64($0.range.count) } ?? 0
                        let beforeLast: Int64 = Int64(range.count) - lastSample
                        #expect(beforeLast < 4096, "a stretch ends with the sample that fills it")
                        stretches += 1
                    case .stored: break
                    }
                }
                #expect(made == names.count, "one clear 'moof' per fragment")
                #expect(stretches > names.count, "fragments larger than the chunk go out in several stretches")
                #expect(try decryptor.clearSegment(joined, key: key.key) == expected, "\(rendition)")
                // A fragment whose samples run past the end of the stored bytes is refused, not read short.
                let cut = Array(joined.prefix(joined.count - 100))
                #expect(throws: ProtectionError.self) { try decryptor.clearSegment(cut, key: key.key) }
                if rendition == "video_0" {
                    // A first subsample 16 bytes longer than its sample: refused while planning, before a byte is sent.
                    var damaged = try TestMedia.bytes(dir.appendingPathComponent(names[0]))
                    let moof = try #require(try MP4Box.children(of: damaged, in: 0..<damaged.count).first("moof"))
                    let traf = try #require(try moof.children(in: damaged).first("traf"))
                    let senc = try #require(try traf.children(in: damaged).first("senc"))
                    // Version/flags, sample count, the IV, the subsample count, then the first clear (2) and protected (4) sizes.
                    let protected = senc.payload.lowerBound + 8 + decryptor.perSampleIVSize + 2 + 2
                    damaged[protected + 3] &+= 16
                    #expect(throws: ProtectionError.self) {
                        try FMP4ClearPlan(size: Int64(damaged.count), decryptor: decryptor) { (offset, count) throws(ProtectionError) -> [UInt8] in
                            Array(damaged[Int(offset)..<(Int(offset) + count)])
                        }
                    }
                }
            }
        }
    }

    func mdat(_ bytes: [UInt8]) -> [UInt8] {
        guard let box = try? MP4Box.children(of: bytes, in: 0..<bytes.count).first("mdat") else { return [] }
        return Array(bytes[box.payload])
    }

    @Test("Python's m3u8 and mpegdash parse every playlist and MPD, and every named segment exists",
          arguments: [(PackageFormat.hlsTS, PackageScheme.clear), (.hlsTS, .sampleAES), (.cmaf, .cbcs), (.cmaf, .cenc)])
    func independentParsers(format: PackageFormat, scheme: PackageScheme) async throws {
        try await TestMedia.offloaded {
            let out = try Self.package(format, scheme, fairPlay: scheme == .sampleAES || scheme == .cbcs ? "skd://asset-1" : nil, label: "-py")
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("check_manifests.py").path
            let result = try TestMedia.run("python3", [script, out.path])
            #expect(result.hasPrefix("OK"), "\(result)")
        }
    }

    @Test("playlists carry the right tags: key tags per scheme, FairPlay skd tags without IV, SESSION-KEY, codecs, resolution")
    func playlistTags() async throws {
        try await TestMedia.offloaded {
            let fairPlay = try Self.package(.hlsTS, .sampleAES, fairPlay: "skd://{kid}", label: "-tags")
            let media = try String(contentsOf: fairPlay.appendingPathComponent("video_0/index.m3u8"), encoding: .utf8)
            #expect(media.contains("#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"skd://\(Self.keyID)\",KEYFORMAT=\"com.apple.streamingkeydelivery\",KEYFORMATVERSIONS=\"1\""))
            #expect(media.contains("KEYFORMAT=\"identity\""), "identity tag too when --key-uri is given")
            let master = try HLSMasterPlaylist(parsing: String(contentsOf: fairPlay.appendingPathComponent("master.m3u8"), encoding: .utf8))
            #expect(master.sessionKeys.contains { $0.keyFormat == "com.apple.streamingkeydelivery" && $0.iv == nil })
            #expect(master.version >= 5)
            let variant = try #require(master.variants.first)
            #expect(variant.codecs?.hasPrefix("avc1.") == true && variant.codecs?.contains("mp4a.40.2") == true)
            #expect(variant.resolution?.width == 320 && variant.resolution?.height == 240 && variant.frameRate == 25)
            #expect(variant.bandwidth >= variant.averageBandwidth ?? 0 && (variant.averageBandwidth ?? 0) > 0)
            #expect(master.renditions.first?.type == "AUDIO" && variant.audioGroup == master.renditions.first?.groupID)

            let aes = try String(contentsOf: try Self.package(.hlsTS, .aes128, label: "-tags").appendingPathComponent("video_0/index.m3u8"), encoding: .utf8)
            #expect(aes.contains("#EXT-X-KEY:METHOD=AES-128,URI=") && aes.contains("IV=0x\(Self.iv)"))
            let cenc = try String(contentsOf: try Self.package(.cmaf, .cenc, label: "-tags").appendingPathComponent("video_0/index.m3u8"), encoding: .utf8)
            #expect(cenc.contains("METHOD=SAMPLE-AES-CTR") && cenc.contains("#EXT-X-MAP:URI=\"init.mp4\""))
            let cbcsDir = try Self.package(.cmaf, .cbcs, label: "-tags")
            #expect(try String(contentsOf: cbcsDir.appendingPathComponent("video_0/index.m3u8"), encoding: .utf8).contains("METHOD=SAMPLE-AES,"))
            let mpd = try DASHManifest(parsing: String(contentsOf: cbcsDir.appendingPathComponent("manifest.mpd"), encoding: .utf8))
            let protection = try #require(mpd.adaptationSets.first?.contentProtection)
            #expect(protection.contains { $0.value == "cbcs" && $0.defaultKID == "01234567-89ab-cdef-0123-456789abcdef" })
            #expect(protection.contains { $0.schemeIDURI == "urn:uuid:1077efec-c0b2-4d02-ace3-3c1e52e2fb4b" && $0.pssh != nil })
        }
    }

    @Test("SAMPLE-AES PMT: stream types 0xDB / 0xCF with zavc, aacd and the apad setup info")
    func sampleAESProgramMap() async throws {
        try await TestMedia.offloaded {
            let out = try Self.package(.hlsTS, .sampleAES, label: "-pmt")
            let video = try TSDemuxer.programStreams(try TestMedia.bytes(out.appendingPathComponent("video_0/segment_0.ts")))
            #expect(video.first?.streamType == 0xDB && video.first?.descriptors == [0x0F, 4] + Array("zavc".utf8))
            let audio = try TSDemuxer.programStreams(try TestMedia.bytes(out.appendingPathComponent("audio_0/segment_0.ts")))
            let descriptors = try #require(audio.first?.descriptors)
            #expect(audio.first?.streamType == 0xCF)
            #expect(Array(descriptors.prefix(6)) == [0x0F, 4] + Array("aacd".utf8))
            #expect(Array(descriptors[6..<16]) == [0x05, UInt8(descriptors.count - 8)] + Array("apadzaac".utf8))
        }
    }

    @Test("the key file is written beside the package folder (never in it) with mode 0600 and imports back; none when not asked for; a failed package leaves the earlier key file; key rotation writes a key per period")
    func keyFile() async throws {
        try await TestMedia.offloaded {
            let out = try Self.package(.hlsTS, .aes128, label: "-keys")
            let path = out.path + ".keys.json"
            #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o600)
            let keys = try KeyFile.read(path).contentKeys()
            #expect(keys == [try Self.contentKey()])
            #expect(try FileManager.default.subpathsOfDirectory(atPath: out.path).allSatisfy { !$0.hasSuffix(".json") })
            #expect(try FileManager.default.contentsOfDirectory(atPath: out.deletingLastPathComponent().path).sorted() == ["out", "out.keys.json"],
                    "no staged file is left")

            // A package that fails (an input that is not media) keeps the earlier package and its key file.
            let before = try Data(contentsOf: URL(fileURLWithPath: path))
            var failing = PackageOptions(inputs: [path], output: out.path, format: .hlsTS, scheme: .aes128)
            #expect(throws: PackagerError.self) { try Packager(options: failing).run() }
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
            #expect(try FileManager.default.contentsOfDirectory(atPath: out.deletingLastPathComponent().path).sorted() == ["out", "out.keys.json"])

            // No key file when none is asked for (the keys are in the summary only); never one inside the folder.
            let (input, _) = try Self.fixture()
            let bare = try TestMedia.temporaryDirectory("pkg-no-key-file").appendingPathComponent("out")
            var options = PackageOptions(inputs: [input], output: bare.path, format: .cmaf, scheme: .cenc, key: try Self.contentKey())
            options.keyFile = nil
            let summary = try Packager(options: options).run()
            let returned = try summary.keys?.contentKeys(), expected = try Self.contentKey()
            #expect(summary.keyFile == nil && returned == [expected])
            #expect(try FileManager.default.contentsOfDirectory(atPath: bare.deletingLastPathComponent().path) == ["out"])
            failing = options
            failing.keyFile = bare.appendingPathComponent("keys.json").path
            let inside = #expect(throws: PackagerError.self) { try Packager(options: failing).run() }
            #expect(inside?.code == "packager-options" && inside?.description.contains("outside the package folder") == true)
            #expect(!FileManager.default.fileExists(atPath: failing.keyFile ?? ""))

            let dir = try TestMedia.temporaryDirectory("rotation")
            let rotated = try Self.package(.hlsTS, .aes128, keyURI: dir.path + "/{kid}.key", rotation: 1, label: "-rotation")
            let file = try KeyFile.read(rotated.path + ".keys.json")
            #expect(file.keys.count == 3 && Set(file.keys.map(\.keyId)).count == 3)
            for key in try file.contentKeys() { try Data(key.key.bytes).write(to: dir.appendingPathComponent("\(key.keyID.hex).key")) }
            let playlist = try String(contentsOf: rotated.appendingPathComponent("video_0/index.m3u8"), encoding: .utf8)
            #expect(playlist.components(separatedBy: "#EXT-X-KEY").count - 1 == 3)
            let clear = try Self.package(.hlsTS, .clear, label: "-rotation")
            #expect(try TestMedia.packetHashes(rotated.appendingPathComponent("video_0/index.m3u8").path) ==
                    TestMedia.packetHashes(clear.appendingPathComponent("video_0/index.m3u8").path))
        }
    }

    @Test("a bitrate ladder with a separate audio file, and MPEG-TS input, package and play")
    func ladderAndTSInput() async throws {
        try await TestMedia.offloaded {
            let small = try TestMedia.make("ladder-small", seconds: 9, size: "320x240", audio: false)
            let large = try TestMedia.make("ladder-large", seconds: 9, size: "640x480", audio: false)
            let audio = try TestMedia.make("ladder-audio", seconds: 9, video: false, container: "m4a")
            let out = try Self.package(.cmaf, .cenc, inputs: [large.path, small.path, audio.path], label: "-ladder")
            let master = try HLSMasterPlaylist(parsing: String(contentsOf: out.appendingPathComponent("master.m3u8"), encoding: .utf8))
            #expect(master.variants.count == 2 && master.renditions.count == 1)
            #expect(master.variants.map(\.resolution?.width) == [320, 640], "variants sorted by bandwidth")
            #expect(try DASHManifest(parsing: String(contentsOf: out.appendingPathComponent("manifest.mpd"), encoding: .utf8))
                .adaptationSets.map(\.representations.count) == [2, 1])

            let ts = try TestMedia.make("ts-input", seconds: 9, container: "ts")
            let fromTS = try Self.package(.cmaf, .clear, inputs: [ts.path], label: "-tsin")
            let counts = try TestMedia.packetCounts(ts)
            #expect(try TestMedia.packetHashes(fromTS.appendingPathComponent("video_0/index.m3u8").path).count == counts["video"])
            #expect(try TestMedia.packetHashes(fromTS.appendingPathComponent("audio_0/index.m3u8").path).count == counts["audio"])
        }
    }

    @Test("bad inputs name the file and leave no output; an existing package survives a failed run")
    func failures() async throws {
        try await TestMedia.offloaded {
            let dir = try TestMedia.temporaryDirectory("failures")
            let text = dir.appendingPathComponent("notes.txt")
            try Data("this is not media at all".utf8).write(to: text)
            let out = dir.appendingPathComponent("out")
            for (input, fragment) in [(dir.appendingPathComponent("missing.mp4").path, "missing.mp4"), (text.path, "notes.txt")] {
                do {
                    _ = try Packager(options: PackageOptions(inputs: [input], output: out.path, format: .hlsTS, scheme: .clear)).run()
                    Issue.record("expected a failure for \(input)")
                } catch {
                    #expect("\(error)".contains(fragment))
                }
                #expect(!FileManager.default.fileExists(atPath: out.path))
            }
            let (good, _) = try Self.fixture()
            _ = try Packager(options: PackageOptions(inputs: [good], output: out.path, format: .hlsTS, scheme: .clear)).run()
            #expect(throws: PackagerError.self) {
                try Packager(options: PackageOptions(inputs: [text.path], output: out.path, format: .hlsTS, scheme: .clear)).run()
            }
            #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("master.m3u8").path), "the previous package is intact")
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".partial-") || $0.contains(".old-") }
            #expect(leftovers.isEmpty)
            #expect(throws: PackagerError.self) {
                try Packager(options: PackageOptions(inputs: [good], output: out.path, format: .hlsTS, scheme: .cenc)).run()
            }
        }
    }
}
