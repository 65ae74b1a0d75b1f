import Foundation
import SatchelBytes
import SatchelPlayback
import SatchelRights
import SatchelTestSupport
import Testing

/// Single media files through the proxy (seed 000 §3.4.3, seed 002's byte streams): a session over one file, served
/// as a byte stream with `Range`, decrypted for a player without DRM; ffmpeg reads each through the proxy to the
/// source's packets.
@Suite("Playback: single files as byte streams")
struct SingleFileTests {
    static let keyID = "0123456789abcdef0123456789abcdef"
    static let key = "00112233445566778899aabbccddeeff"

    /// One file of a folder (or of an origin) as the library's asset.
    struct OneFile: PlaybackLibrary {
        let folder: String?
        let name: String
        var origin: [String: OriginFile] = [:]
        func openForPlayback(_ assetID: String) async throws(PlaybackError) -> PlayableAsset {
            var asset = PlayableAsset(path: folder, entry: name, origin: origin)
            asset.isSingleFile = true
            return asset
        }
    }

    static func rights() throws -> PlaybackProxyTests.Rights {
        PlaybackProxyTests.Rights([PlaybackKey(keyID: keyID, key: try SecretBytes(hex: key, count: 16))])
    }

    @Test("a clear MP4 is served as stored, with byte ranges; ffmpeg reads the source's packets")
    func clear() async throws {
        try TestMedia.require("ffmpeg")
        let source = try await TestMedia.offloaded { try TestMedia.make("single-clear", seconds: 4) }
        let proxy = try PlaybackProxy(library: OneFile(folder: source.deletingLastPathComponent().path, name: source.lastPathComponent), rights: nil)
        let url = try await proxy.open(asset: "clip")
        try await TestMedia.offloaded { () throws -> Void in
            let (played, expected) = (try TestMedia.packetHashes(url), try TestMedia.packetHashes(source.path))
            #expect(!expected.isEmpty && played == expected)
        }
        let stored = try TestMedia.bytes(source)
        let part = try await PlaybackProxyTests.get(url, range: "bytes=100-199")
        #expect(part.status == 206 && part.body == Array(stored[100...199]))
        await proxy.stop()
    }

    /// A protected single file of `source`'s video: Shaka Packager's single-file output (`cenc`, `cbcs`), or its `cenc`
    /// output as a PIFF `.ismv` writes it (`piff`).
    static func protectedFile(_ scheme: String, of source: URL, in folder: URL) throws -> URL {
        let output = folder.appendingPathComponent("video-\(scheme).mp4")
        let result = try ProcessRunner.run(try TestMedia.shakaPackager(), [
            "in=\(source.path),stream=video,output=\(output.path)", "--enable_raw_key_encryption", "--keys", "label=:key_id=\(keyID):key=\(key)",
            "--protection_scheme", scheme == "cbcs" ? "cbcs" : "cenc", "--clear_lead", "0",
        ])
        guard result.status == 0 else { throw TestMedia.ToolError(message: "shaka: \(result.stderr.suffix(400))") }
        guard scheme == "piff" else { return output }
        let ismv = folder.appendingPathComponent("video.ismv")
        try Data(try PIFFFixtures.piffFile(try TestMedia.bytes(output))).write(to: ismv)
        return ismv
    }

    /// A new folder (`label`) holding a clip of `seconds` (`clip`, made once) and its protected single file (`scheme`).
    static func protectedFixture(_ scheme: String, label: String, clip: String, seconds: Int) async throws -> (folder: URL, source: URL, file: URL) {
        try TestMedia.require("ffmpeg")
        let folder = try TestMedia.temporaryDirectory(label)
        let source = try await TestMedia.offloaded { try TestMedia.make(clip, seconds: seconds) }
        let file = try await TestMedia.offloaded { try Self.protectedFile(scheme, of: source, in: folder) }
        return (folder, source, file)
    }

    @Test("a protected fragmented file — cenc, cbcs, and PIFF as in an .ismv — is decrypted as it is sent, from disk and from an origin: ffmpeg reads the packets it would decrypt itself with the key; any byte range is the clear file's; no protection box is left; without rights it does not open",
          arguments: ["cenc", "cbcs", "piff"])
    func protected(scheme: String) async throws {
        let (folder, _, file) = try await Self.protectedFixture(scheme, label: "single-\(scheme)", clip: "single-protected-source", seconds: 6)
        let name = file.lastPathComponent
        // The reference: the packets of Shaka's file as ffmpeg decrypts them with the key (the PIFF file is the same media).
        let shaka = folder.appendingPathComponent("video-\(scheme).mp4").path
        let reference = try await TestMedia.offloaded { try TestMedia.packetHashes(shaka, extra: ["-decryption_key", Self.key]) }
        #expect(reference.count > 100, "\(reference.count) packets")
        let origin = try await TestOrigin.start(root: folder)
        defer { origin.stop() }
        let size = Int64(try TestMedia.bytes(file).count)
        for library in [OneFile(folder: folder.path, name: name),
                        OneFile(folder: nil, name: name, origin: [name: OriginFile(url: origin.url(name), expectedSize: size)])] {
            let proxy = try PlaybackProxy(library: library, rights: try Self.rights())
            let url = try await proxy.open(asset: "video")
            try await TestMedia.offloaded { () throws -> Void in
                let played = try TestMedia.packetHashes(url)
                #expect(played == reference, "\(played.count) packets of \(reference.count)")
            }
            let whole = try await PlaybackProxyTests.get(url)
            #expect(whole.status == 200 && whole.body.count > 100_000, "\(whole.status) \(whole.body.count)")
            let middle = whole.body.count / 3
            let part = try await PlaybackProxyTests.get(url, range: "bytes=\(middle)-\(middle + 70_000)")
            #expect(part.status == 206 && part.body == Array(whole.body[middle...(middle + 70_000)]))
            #expect(part.headers["content-range"] == "bytes \(middle)-\(middle + 70_000)/\(whole.body.count)")
            for type in ["senc", "encv", "sinf", "sidx"] { #expect(!Self.contains(whole.body, type), "no '\(type)' is left") }
            await proxy.stop()
        }
        let refusing = try PlaybackProxy(library: OneFile(folder: folder.path, name: name), rights: nil)
        await #expect(throws: PlaybackError.notPlayable(.noRights)) { _ = try await refusing.open(asset: "video") }
    }

    @Test("an .ismv with two video tracks plays the highest bit rate only (seed 000 §3.4.3), with its audio")
    func highestVideo() async throws {
        try TestMedia.require("ffmpeg")
        let folder = try TestMedia.temporaryDirectory("single-ismv")
        let high = try await TestMedia.offloaded { try TestMedia.make("single-ismv-high", seconds: 4, size: "640x360") }
        let low = try await TestMedia.offloaded { try TestMedia.make("single-ismv-low", seconds: 4, size: "320x180", audio: false) }
        let ismv = folder.appendingPathComponent("show.ismv")
        try await TestMedia.offloaded { () throws -> Void in
            _ = try TestMedia.run("ffmpeg", ["-v", "error", "-i", low.path, "-i", high.path, "-map", "0:v", "-map", "1:v", "-map", "1:a",
                                             "-c", "copy", "-f", "ismv", ismv.path])
        }
        let proxy = try PlaybackProxy(library: OneFile(folder: folder.path, name: "show.ismv"), rights: nil)
        let url = try await proxy.open(asset: "show")
        try await TestMedia.offloaded { () throws -> Void in
            let streams = try TestMedia.run("ffprobe", ["-v", "error", "-show_entries", "stream=codec_type,width", "-of", "csv=p=0", url])
            let lines = streams.split(separator: "\n").map(String.init).filter { !$0.isEmpty }
            #expect(lines.sorted() == ["audio", "video,640"], "one video track, the higher, and the audio: \(lines)")
            let played = try TestMedia.packetHashes(url)
            let expected = try TestMedia.packetHashes(ismv.path, extra: []).count
            #expect(!played.isEmpty && played.count < expected, "the lower track's packets are gone")
        }
        await proxy.stop()
    }

    static func contains(_ bytes: [UInt8], _ type: String) -> Bool {
        let needle = Array(type.utf8)
        return bytes.indices.dropLast(3).contains { bytes[$0..<($0 + 4)].elementsEqual(needle) }
    }
}
