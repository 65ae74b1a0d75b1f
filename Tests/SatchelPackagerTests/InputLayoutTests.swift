import Foundation
import SatchelMedia
import SatchelPackager
import SatchelBytes
import SatchelSystem
import SatchelTestSupport
import Testing

/// MP4 inputs are read by layout: the boxes but `mdat` first, each segment's sample bytes when it is written.
@Suite("Packager input layout", .serialized)
struct InputLayoutTests {
    /// The bytes of every file of a package, by path, without the playlists' and MPD's text (identical anyway).
    static func files(_ package: URL) throws -> [String: [UInt8]] {
        var result: [String: [UInt8]] = [:]
        for path in TestMedia.files(under: package) { result[path] = try TestMedia.bytes(package.appendingPathComponent(path)) }
        return result
    }

    static func package(_ input: URL, _ label: String) throws -> URL {
        let out = try TestMedia.temporaryDirectory("layout-\(label)").appendingPathComponent("out")
        _ = try Packager(options: PackageOptions(inputs: [input.path], output: out.path, format: .cmaf, scheme: .clear, segmentDuration: 2)).run()
        return out
    }

    /// The top-level boxes of an MP4 file with 32-bit sizes: type and offset.
    static func topLevelBoxes(_ bytes: [UInt8]) -> [(type: String, offset: Int)] {
        var boxes: [(type: String, offset: Int)] = []
        var offset = 0
        while offset + 8 <= bytes.count {
            let size = bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
            boxes.append((String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self), offset))
            guard size >= 8 else { break }
            offset += size
        }
        return boxes
    }

    /// `bytes` with the 8-byte `free` box that ffmpeg writes before `mdat` and the `mdat` header merged into one
    /// 16-byte `mdat` header with a 64-bit size (what ffmpeg itself does for a large file): no offset moves.
    static func largeSizeMediaData(_ bytes: [UInt8]) throws -> [UInt8] {
        let boxes = topLevelBoxes(bytes)
        let index = try #require(boxes.firstIndex { $0.type == "mdat" })
        try #require(index > 0 && boxes[index - 1].type == "free" && boxes[index].offset - boxes[index - 1].offset == 8)
        let start = boxes[index - 1].offset
        let size: UInt64 = bytes[(start + 8)..<(start + 12)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } + 8
        let largeSize: [UInt8] = (0..<8).map { (index: Int) -> UInt8 in UInt8(truncatingIfNeeded: size >> (56 - 8 * UInt64(index))) }
        var out = bytes
        out.replaceSubrange(start..<(start + 16), with: [0, 0, 0, 1] + Array("mdat".utf8) + largeSize)
        return out
    }

    @Test("metadata after or before the media data, a 64-bit mdat size and an mdat that runs to the end of the file package to the same bytes; a file cut inside a box is an error")
    func layouts() async throws {
        try await TestMedia.offloaded {
            let source = try TestMedia.make("layout-source", seconds: 6)  // ftyp, free, mdat, moov
            let dir = try TestMedia.temporaryDirectory("layout-inputs")
            // The other layouts are remuxed from the same encode: two runs of x264 now and then differ (seen here in
            // about one run of twenty), and this test is about layouts, not encoders.
            func remux(_ name: String, _ movflags: String) throws -> URL {
                let url = dir.appendingPathComponent(name)
                _ = try TestMedia.run("ffmpeg", ["-v", "error", "-y", "-i", source.path, "-map", "0", "-c", "copy", "-movflags", movflags, url.path])
                return url
            }
            let faststart = try remux("faststart.mp4", "+faststart")  // ftyp, moov, free, mdat
            let large = dir.appendingPathComponent("large.mp4")
            try Data(try Self.largeSizeMediaData(try TestMedia.bytes(source))).write(to: large)
            // In the faststart file `mdat` is the last box: a size of 0 means "to the end of the file".
            var toEnd = try TestMedia.bytes(faststart)
            let boxes = Self.topLevelBoxes(toEnd)
            try #require(boxes.last?.type == "mdat")
            let mdat = boxes[boxes.count - 1].offset
            toEnd.replaceSubrange(mdat..<(mdat + 4), with: [0, 0, 0, 0])
            let open = dir.appendingPathComponent("to-end.mp4")
            try Data(toEnd).write(to: open)

            let reference = try Self.files(try Self.package(source, "source"))
            #expect(reference.keys.contains("video_0/segment_1.m4s") && reference.keys.contains("audio_0/segment_1.m4s"))
            for (input, label) in [(faststart, "faststart"), (large, "large"), (open, "to-end")] {
                let files = try Self.files(try Self.package(input, label))
                #expect(files.keys.sorted() == reference.keys.sorted(), "\(label)")
                for (path, bytes) in reference where path.hasSuffix(".m4s") || path.hasSuffix(".mp4") {
                    #expect(files[path] == bytes, "\(label): \(path)")
                }
            }
            // A file cut short inside its last box (the moov): the box does not fit, and the error says so.
            let cut = dir.appendingPathComponent("cut.mp4")
            try Data(try TestMedia.bytes(source).dropLast(1_000)).write(to: cut)
            let cutError = #expect(throws: PackagerError.self) { try Self.package(cut, "cut") }
            #expect("\(cutError.map { "\($0)" } ?? "")".contains("does not fit the file"))
            // A fragmented input (moof + mdat pairs): the same packets (sizes and bytes; ffmpeg times the fragmented
            // file's first audio frame differently, so the times are not compared).
            let fragmented = try remux("fragmented.mp4", "+frag_keyframe+empty_moov+default_base_moof")
            let fromFragments = try Self.package(fragmented, "fragmented")
            let referencePackage = try Self.package(source, "source")
            for playlist in ["video_0/index.m3u8", "audio_0/index.m3u8"] {
                func sizesAndHashes(_ package: URL) throws -> [String] {
                    try TestMedia.packetHashes(package.appendingPathComponent(playlist).path).map { $0.split(separator: ",").suffix(2).joined(separator: ",") }
                }
                let expected = try sizesAndHashes(referencePackage)
                #expect(!expected.isEmpty)
                #expect(try sizesAndHashes(fromFragments) == expected, "\(playlist)")
            }
        }
    }

    @Test("an input cut short while it is packaged is an error that says the file changed; the earlier package stays")
    func inputChanges() async throws {
        try await TestMedia.offloaded {
            let source = try TestMedia.make("layout-source", seconds: 6)
            let dir = try TestMedia.temporaryDirectory("layout-changes")
            let input = dir.appendingPathComponent("input.mp4")
            try FileManager.default.copyItem(at: source, to: input)
            let out = dir.appendingPathComponent("out")
            let options = PackageOptions(inputs: [input.path], output: out.path, format: .cmaf, scheme: .cbcs, segmentDuration: 2)
            _ = try Packager(options: options).run()
            let earlier = try Self.files(out)
            // The metadata says where every sample is; after the first segment the media data is cut in half.
            let size = try #require(try FileManager.default.attributesOfItem(atPath: input.path)[.size] as? Int)
            let truncated = Locked(false)
            let error = #expect(throws: PackagerError.self) {
                try Packager(options: options).run { _ in
                    truncated.withLock { done in
                        if !done { done = truncate(input.path, off_t(size / 2)) == 0 }
                    }
                }
            }
            #expect(truncated.current)
            #expect("\(error.map { "\($0)" } ?? "")".contains("changed"))
            #expect(try Self.files(out) == earlier, "the earlier package is untouched")
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".partial-") }
            #expect(leftovers.isEmpty)
        }
    }

    @Test("an MP4 input larger than memory and swap together packages like its first megabytes; a moov of gigabytes and an MPEG-TS input past memory and swap (read whole) are typed errors that say so")
    func largerThanMemory() async throws {
        try await TestMedia.offloaded {
            let source = try TestMedia.make("layout-source", seconds: 6)
            let dir = try TestMedia.temporaryDirectory("layout-huge")
            // ftyp, moov, free, mdat: the mdat, last, made to run to the end of a sparse file past what the machine could
            // reserve (the samples are where they were, at its start).
            let faststart = dir.appendingPathComponent("faststart.mp4")
            _ = try TestMedia.run("ffmpeg", ["-v", "error", "-y", "-i", source.path, "-map", "0", "-c", "copy", "-movflags", "+faststart", faststart.path])
            var bytes = try TestMedia.bytes(faststart)
            let mdat = try #require(Self.topLevelBoxes(bytes).last { $0.type == "mdat" }?.offset)
            bytes.replaceSubrange(mdat..<(mdat + 4), with: [0, 0, 0, 0])
            let input = dir.appendingPathComponent("huge.mp4")
            try Data(bytes).write(to: input)
            let size = MachineMemory.addressSpace + (1 << 30)
            #expect(truncate(input.path, off_t(size)) == 0)
            defer { try? FileManager.default.removeItem(at: input) }
            let expected = try Self.files(try Self.package(source, "huge-reference"))
            let files = try Self.files(try Self.package(input, "huge"))
            #expect(files.keys.sorted() == expected.keys.sorted())
            for (path, bytes) in expected where path.hasSuffix(".m4s") || path.hasSuffix(".mp4") {
                #expect(files[path] == bytes, "\(path)")
            }
            // A moov that claims gigabytes is not read into memory: it is refused.
            let bloated = dir.appendingPathComponent("bloated.mp4")
            let moovSize = UInt32(2 << 30)
            try Data([0, 0, 0, 16] + Array("ftypisom".utf8) + [0, 0, 2, 0] + (0..<4).map { UInt8(truncatingIfNeeded: moovSize >> (24 - 8 * UInt32($0))) }
                     + Array("moov".utf8)).write(to: bloated)
            #expect(truncate(bloated.path, off_t(16 + Int(moovSize))) == 0)
            defer { try? FileManager.default.removeItem(at: bloated) }
            let bloatedError = #expect(throws: PackagerError.self) {
                try Packager(options: PackageOptions(inputs: [bloated.path], output: dir.appendingPathComponent("bloated-out").path, format: .cmaf, scheme: .clear)).run()
            }
            #expect("\(bloatedError.map { "\($0)" } ?? "")".contains("more than the 1024 MB metadata may take"))
            // An MPEG-TS input is read whole: past memory and swap it is refused, and says why.
            let transport = dir.appendingPathComponent("huge.ts")
            try Data([0x47, 0x40, 0x00, 0x10] + [UInt8](repeating: 0xFF, count: 184) + [0x47]).write(to: transport)
            #expect(truncate(transport.path, off_t(size)) == 0)
            defer { try? FileManager.default.removeItem(at: transport) }
            let out = dir.appendingPathComponent("out")
            let error = #expect(throws: PackagerError.self) {
                try Packager(options: PackageOptions(inputs: [transport.path], output: out.path, format: .hlsTS, scheme: .clear)).run()
            }
            #expect("\(error.map { "\($0)" } ?? "")".contains("larger than this machine's memory and swap"))
            #expect(!FileManager.default.fileExists(atPath: out.path))
        }
    }
}
