import Foundation
import Crypto
import SatchelAgent
import SatchelBackplane
import SatchelBytes
import SatchelFairPlay
import SatchelMedia
import SatchelProtection

/// One parser under fuzzing: its seeds (real inputs) and a body that feeds it one input. A typed error is a
/// pass; a trap kills the process (the runner reports the target and the input's seed); an input slower
/// than ``FuzzCampaign/hangLimit`` is reported as a hang.
public struct FuzzTarget: Sendable {
    /// The target's name (`hls-media`, `dash`, …).
    public var name: String
    /// Seed inputs.
    public var seeds: [[UInt8]]
    /// Feeds one input; returns true when it was accepted, false for a typed error.
    public var run: @Sendable ([UInt8]) -> Bool

    /// A target.
    public init(name: String, seeds: [[UInt8]], run: @escaping @Sendable ([UInt8]) -> Bool) {
        self.name = name
        self.seeds = seeds
        self.run = run
    }
}

/// What a campaign did.
public struct FuzzReport: Sendable, CustomStringConvertible {
    public var target: String
    public var inputs = 0
    public var accepted = 0
    public var rejected = 0
    public var hangs = 0
    public var slowestMilliseconds = 0.0
    public var seconds = 0.0

    public var description: String {
        target.padding(toLength: 14, withPad: " ", startingAt: 0)
            + String(format: "%9d inputs  %8d accepted  %8d typed errors  %3d hangs  slowest %7.2f ms  %6.1f s",
                     inputs, accepted, rejected, hangs, slowestMilliseconds, seconds)
    }
}

/// Runs a target over mutated seeds.
public enum FuzzCampaign {
    /// An input taking longer than this is a hang.
    public static let hangLimit: Duration = .seconds(1)

    /// Runs `count` inputs (or until `deadline`), reproducible from `seed`.
    public static func run(_ target: FuzzTarget, count: Int, seed: UInt64, deadline: ContinuousClock.Instant? = nil) -> FuzzReport {
        var mutator = FuzzMutator(seed: seed)
        var report = FuzzReport(target: target.name)
        let clock = ContinuousClock()
        let start = clock.now
        let seeds = target.seeds.isEmpty ? [[]] : target.seeds
        for index in 0..<max(count, 0) {
            if let deadline, index % 256 == 0, clock.now >= deadline { break }
            let base = seeds[mutator.below(seeds.count)]
            let input = index < seeds.count ? seeds[index] : mutator.mutate(base, corpus: seeds)
            let began = clock.now
            let accepted = target.run(input)
            let took = clock.now - began
            report.inputs += 1
            if accepted { report.accepted += 1 } else { report.rejected += 1 }
            if took > hangLimit { report.hangs += 1 }
            report.slowestMilliseconds = max(report.slowestMilliseconds, Double(took.components.attoseconds) / 1e15 + Double(took.components.seconds) * 1000)
        }
        let total = clock.now - start
        report.seconds = Double(total.components.seconds) + Double(total.components.attoseconds) / 1e18
        return report
    }
}

/// Every parser of input that comes from the network or from files, with seeds from a real package.
public enum FuzzTargets {
    /// A fixed device key for the agent store's sealed records (the same records every run).
    static let deviceKey: P256.Signing.PrivateKey = {
        (try? P256.Signing.PrivateKey(rawRepresentation: [UInt8](repeating: 0x5A, count: 32))) ?? P256.Signing.PrivateKey()
    }()
    /// One sealed record of that key (the seed of the `sealed-state` target).
    static let sealedState = Array(SealedDeviceState.sample(deviceKey: deviceKey).utf8)
    /// A Widevine message with every field Satchel writes, and a PlayReady Object.
    static let drmSignalling: [[UInt8]] = {
        let kid = KeyID.random()
        let widevine = WidevinePSSHData(keyIDs: [kid, KeyID.random()], provider: "satchel", contentID: Array("movie".utf8), protectionScheme: "cbcs")
        let playReady = (try? PlayReadyHeader.object(keyID: kid, key: SecretBytes.random(16), scheme: .cenc, licenseURL: "https://licenses.example/pr")) ?? []
        return [widevine.encoded, playReady]
    }()

    /// The targets, seeded from `corpus`.
    public static func all(_ corpus: FuzzCorpus) -> [FuzzTarget] {
        [
            FuzzTarget(name: "hls-media", seeds: corpus.mediaPlaylists) { bytes in
                (try? HLSMediaPlaylist(parsing: String(decoding: bytes, as: UTF8.self))) != nil
            },
            FuzzTarget(name: "hls-master", seeds: corpus.masterPlaylists) { bytes in
                let text = String(decoding: bytes, as: UTF8.self)
                _ = HLSRewriter.rewrite(text) { _ in HLSURIDecision.keep }
                return (try? HLSMasterPlaylist(parsing: text)) != nil
            },
            FuzzTarget(name: "dash", seeds: corpus.mpds) { bytes in
                guard let manifest = try? DASHManifest(parsing: String(decoding: bytes, as: UTF8.self)) else { return false }
                for period in manifest.periods.indices {
                    for set in manifest.periods[period].adaptationSets {
                        for rep in set.representations {
                            _ = try? rep.segmentTemplate?.segments(presentationDuration: manifest.duration(ofPeriod: period), limit: 10_000)
                            _ = try? rep.segmentReferences(periodDuration: manifest.duration(ofPeriod: period), limit: 10_000)
                        }
                    }
                }
                return true
            },
            FuzzTarget(name: "xml-spans", seeds: corpus.mpds + [corpus.smooth]) { bytes in
                guard let spans = try? MarkupSpans(String(decoding: bytes, as: UTF8.self)) else { return false }
                _ = DASHRewriter.rewrite(spans) { _, _ in .keep }
                return true
            },
            FuzzTarget(name: "smooth", seeds: [corpus.smooth]) { bytes in
                guard let manifest = try? SmoothManifest(parsing: String(decoding: bytes, as: UTF8.self)) else { return false }
                // What the playback proxy reads of it: each level's codec setup, the PlayReady header's key IDs.
                for stream in manifest.streams {
                    for level in stream.qualityLevels { _ = try? level.track(kind: stream.type, timescale: stream.timescale ?? manifest.timescale) }
                }
                _ = manifest.protectionHeader.map { PlayReadyHeader.keyIDs(base64: $0) }
                return true
            },
            FuzzTarget(name: "mp4", seeds: corpus.mp4Files) { bytes in
                // Demuxed from its layout as the packager reads a file: the moov and moof boxes alone.
                if let top = try? MP4Box.children(of: bytes, in: 0..<bytes.count) {
                    let boxes = top.filter { $0.type == "moov" || $0.type == "moof" }
                        .map { MP4Layout.Box(type: $0.type.description, offset: $0.offset, bytes: Array(bytes[$0.offset..<($0.offset + $0.size)])) }
                    _ = try? MP4Demuxer.demux(layout: MP4Layout(fileSize: bytes.count, boxes: boxes))
                }
                guard let tracks = try? MP4Demuxer.demux(bytes) else { return false }
                // What demuxes is remuxed to TS as the playback proxy does (one track per kind).
                let chosen = Array(tracks.filter { $0.kind == .video }.prefix(1) + tracks.filter { $0.kind == .audio }.prefix(1))
                if let remuxed = try? TSRemuxer.segment(chosen), let prepared = try? TSRemuxer.Prepared(chosen) {
                    // Written into memory of the prepared bound, as the proxy does: the same bytes, never more than the bound.
                    var written: [UInt8] = []
                    var memory = [UInt8](repeating: 0, count: prepared.maximumSize)
                    memory.withUnsafeMutableBytes { bytes in
                        var out = TSBufferOutput(bytes)
                        var continuity = TSContinuity()
                        prepared.write(continuity: &continuity, into: &out)
                        precondition(!out.overflowed, "a prepared TS segment overflowed its own bound")
                        written = Array(bytes[..<out.count])
                    }
                    precondition(written == remuxed, "a TS segment written into memory differs from the array's")
                }
                return true
            },
            FuzzTarget(name: "sidx", seeds: [FuzzCorpus.segmentIndex]) { bytes in
                (try? SegmentIndex(bytes, at: 1_000)) != nil
            },
            FuzzTarget(name: "cenc-fragment", seeds: corpus.cencSegments) { bytes in
                guard let decryptor = corpus.cencDecryptor else { return false }
                // Made clear as the proxy streams it (the plan), read as a Smooth fragment, read as a PlayReady object.
                _ = try? decryptor.clearSegment(bytes, key: corpus.cencKey)
                let template = MediaTrack(id: 1, codec: .aac, timescale: 48_000, codecConfiguration: [0x11, 0x90], samples: [])
                _ = try? MP4Demuxer.demuxFragment(bytes, track: template, startDTS: 1_000)
                _ = PlayReadyHeader.keyIDs(object: bytes)
                return (try? decryptor.decrypt(segment: bytes, key: corpus.cencKey)) != nil
            },
            FuzzTarget(name: "drm-signalling", seeds: Self.drmSignalling) { bytes in
                // Widevine's pssh data and a PlayReady Object as a player reads them: typed errors only, and a message
                // that decodes encodes to one that decodes to the same fields.
                _ = PlayReadyHeader.keyIDs(object: bytes)
                guard let message = try? WidevinePSSHData(decoding: bytes) else { return false }
                precondition((try? WidevinePSSHData(decoding: message.encoded)) == message, "a Widevine message did not survive its own encoding")
                return true
            },
            FuzzTarget(name: "ts", seeds: corpus.tsSegments) { bytes in
                (try? TSDemuxer.demux(bytes, allowSampleAES: true)) != nil
            },
            FuzzTarget(name: "tllv", seeds: corpus.tllvPayloads) { bytes in
                _ = try? SPCParser.readHeader(bytes)
                return (try? TLLVCodec.parse(bytes)) != nil
            },
            FuzzTarget(name: "sealed-state", seeds: [Self.sealedState]) { bytes in
                // The agent store's sealed record: only the record as sealed opens; every change is refused (a changed
                // record that opened would be a forgery: the run stops on it).
                let opened = SealedDeviceState.opens(String(decoding: bytes, as: UTF8.self), deviceKey: Self.deviceKey)
                precondition(!opened || bytes == Self.sealedState, "a changed sealed record opened")
                return opened
            },
            FuzzTarget(name: "json", seeds: corpus.jsonBodies) { bytes in
                // A backplane command as the device reads it: typed errors only, and what decodes encodes back to itself.
                if let command = try? JSONCoding.decoder().decode(BackplaneCommand.self, from: Data(bytes)) {
                    let again = try? JSONCoding.decoder().decode(BackplaneCommand.self, from: JSONCoding.encoder().encode(command))
                    precondition(again == command, "a backplane command does not survive its own JSON form")
                }
                return (try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))) != nil
            },
            FuzzTarget(name: "event-stream", seeds: [Self.eventStream]) { bytes in
                // The backplane's server-sent events as the device reads them, fed whole and cut in two: the same events.
                var whole = EventStreamParser(), cut = EventStreamParser()
                let events = whole.feed(bytes)
                let middle = bytes.count / 2
                precondition(cut.feed(bytes[..<middle]) + cut.feed(bytes[middle...]) == events, "the events depend on how the bytes were cut")
                return !events.isEmpty
            },
            FuzzTarget(name: "protected-file", seeds: [Self.protectedFile]) { bytes in
                // A protected file opened as a reader would: typed errors only, and only the file as written opens (a
                // changed file that opened would be a forgery: the run stops on it).
                guard let header = try? ProtectedFileHeader.parse(bytes), (try? header.verify(Self.fileKey)) != nil,
                      UInt64(bytes.count) == header.fileSize else { return false }
                for index in 0..<header.chunkCount {
                    let start = Int(header.offset(ofChunk: index)), length = header.plainLength(ofChunk: index) + ProtectedFileHeader.tagLength
                    guard (try? ProtectedChunks.open(Array(bytes[start..<(start + length)]), index: index, header: header, key: Self.fileKey)) != nil else {
                        return false
                    }
                }
                precondition(bytes == Self.protectedFile, "a changed protected file opened")
                return true
            },
        ]
    }

    /// The key of ``protectedFile``.
    static let fileKey = SecretBytes(Array(0..<16))

    /// A protected file of three 1 KiB chunks (the last shorter), with a title.
    static let protectedFile: [UInt8] = {
        let plain = (0..<2500).map { UInt8(truncatingIfNeeded: $0 * 31) }
        guard let keyID = try? KeyID(hex: "00112233445566778899aabbccddeeff"),
              let header = try? ProtectedFileHeader(keyID: keyID, noncePrefix: Array(repeating: 5, count: 7), chunkSize: 1024, plainSize: 2500,
                                                    contentType: "application/pdf", metadata: ["title": "Fuzz"]).sealed(with: fileKey) else { return [] }
        var file = header.bytes()
        for index in 0..<header.chunkCount {
            let start = Int(index) * 1024
            file += (try? ProtectedChunks.seal(Array(plain[start..<(start + header.plainLength(ofChunk: index))]), index: index, header: header,
                                               key: fileKey)) ?? []
        }
        return file
    }()

    /// A stream as `GET /backplane/stream` sends it: settings, a command, a heartbeat.
    static let eventStream = Array("""
        event: settings
        data: {"expiryAfterPlay":60}

        id: 3
        event: command
        data: {"id":"c3","sequence":3,"issued":"2027-01-15T08:00:01Z","kind":"wipe"}

        : heartbeat

        """.utf8)
}
