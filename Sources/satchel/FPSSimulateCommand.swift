import ArgumentParser
import Foundation
import SatchelBytes
import SatchelFairPlay

/// `satchel fps simulate`: a software FairPlay device for testing key servers.
/// Works only with credentials whose DASk or ASk you hold (development or test credentials).
struct FPSSimulateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "A simulated FairPlay device (development/test credentials only): make SPCs, open CKCs.",
        subcommands: [MakeSPC.self, OpenCKC.self])

    /// `satchel fps simulate spc`.
    struct MakeSPC: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "spc", abstract: "Write an SPC and the session file needed to open its CKC.")

        @Option(help: "The Application Certificate (DER or PEM).") var certificate: String
        @OptionGroup var secrets: SecretOptions
        @Option(name: .customLong("asset-id"), help: "The asset ID as text (2-200 bytes).") var assetID: String?
        @Option(name: .customLong("asset-id-hex"), help: "The asset ID in hex.") var assetIDHex: String?
        @Option(name: .customLong("playback-state"), help: "Media playback state: ready, playing or expiring.") var playbackState: String?
        @Option(name: .customLong("creation-date"), help: "SPC creation date, seconds since 1970 (default now).") var creationDate: UInt32?
        @Option(help: "Capabilities, comma separated: hdcp, offline.") var capabilities: String?
        @Option(help: "Streaming target: device, airplay or av-adapter.") var streaming: String?
        @Option(name: .customLong("sync-content-id"), help: "Add a Sync TLLV with this 16-byte content ID (hex).") var syncContentID: String?
        @Option(name: .customLong("sync-duration"), help: "Sync TLLV duration to expiry in seconds.") var syncDuration: UInt32 = SyncInfo.unlimited
        @Option(name: .customLong("supported-versions"), help: "Protocol versions supported, comma separated.") var supportedVersions = "1"
        @Option(name: .customLong("used-version"), help: "Protocol version used.") var usedVersion: UInt32 = 1
        @Option(name: .customLong("return-tag"), help: "A tag (16 hex digits) the CKC must return; repeatable.") var returnTags: [String] = []
        @Option(name: .customLong("undefined-tllv"), help: "Add an undefined TLLV as TAG:VALUE in hex; repeatable.") var undefined: [String] = []
        @Option(help: "Where to write the SPC.") var out: String
        @Option(help: "Where to write the session (holds the session key; written with mode 0600).") var session: String

        func run() throws {
            let simulator = try DeviceSimulator(certificate: FileIO.read(certificate, what: "certificate"), dFunction: secrets.dFunction())
            let options = try makeOptions()
            let (spc, values) = try simulator.makeSPC(options)
            try FileIO.write(spc, to: out)
            try FileIO.write(Array(try JSONCoding.encoder().encode(values)), to: session, mode: 0o600)
            print("wrote \(out): \(spc.count) bytes; session in \(session)")
        }

        func makeOptions() throws -> DeviceSimulator.Options {
            let asset: [UInt8]
            switch (assetID, assetIDHex) {
            case let (text?, nil): asset = Array(text.utf8)
            case let (nil, hex?): asset = try hexOption(hex, count: hex.count / 2, name: "--asset-id-hex")
            default: throw CLIError("give exactly one of --asset-id or --asset-id-hex")
            }
            var options = DeviceSimulator.Options(assetID: asset, supportedVersions: try parseVersions(supportedVersions), usedVersion: usedVersion)
            if let playbackState {
                let states = ["ready": PlaybackState.readyToStart, "playing": .playingOrPaused, "expiring": .leaseExpiring]
                guard let state = states[playbackState] else { throw CLIError("--playback-state: use ready, playing or expiring") }
                options.playbackState = MediaPlaybackState(
                    creationDate: creationDate ?? UInt32(Date().timeIntervalSince1970), state: state, sessionID: UInt64.random(in: 0...UInt64.max))
            }
            if let capabilities {
                let names = Set(capabilities.split(separator: ",").map(String.init))
                guard names.isSubset(of: ["hdcp", "offline"]) else { throw CLIError("--capabilities: use hdcp and/or offline") }
                options.capabilities = Capabilities(hdcpEnforcement: names.contains("hdcp"), offlineKey: names.contains("offline"))
            }
            if let streaming {
                guard let target = StreamingTarget(rawValue: streaming) else { throw CLIError("--streaming: use device, airplay or av-adapter") }
                options.streamingIndicator = target.indicatorValue
            }
            if let syncContentID {
                options.sync = SyncInfo(contentID: try hexOption(syncContentID, count: 16, name: "--sync-content-id"), durationToExpiry: syncDuration)
            }
            options.returnTags = try returnTags.map { TLLVTag(try tagValue($0)) }
            options.extraTLLVs = try undefined.map { item in
                let parts = item.split(separator: ":", maxSplits: 1).map(String.init)
                guard parts.count == 2 else { throw CLIError("--undefined-tllv: expected TAG:VALUE") }
                let value = parts[1].isEmpty ? [] : try hexOption(parts[1], count: parts[1].count / 2, name: "--undefined-tllv")
                return TLLV(tag: TLLVTag(try tagValue(parts[0])), value: value)
            }
            return options
        }

        func tagValue(_ text: String) throws -> UInt64 {
            let bytes = try hexOption(text, count: 8, name: "tag")
            return bytes.reduce(0) { $0 << 8 | UInt64($1) }
        }
    }

    /// `satchel fps simulate open`.
    struct OpenCKC: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "open", abstract: "Open a CKC as the device that made the SPC would.")

        @Option(help: "The CKC file.") var ckc: String
        @Option(help: "The session file written by 'simulate spc'.") var session: String
        @Option(name: .customLong("expect-content-key"), help: "Check the recovered key against this hex value.") var expectContentKey: String?
        @Option(name: .customLong("content-key-out"), help: "Write the recovered key (binary, mode 0600) to this file.") var contentKeyOut: String?

        /// What a server's JSON error says (problem+json `detail`, else the text), when `bytes` is one rather than a CKC.
        static func serverError(_ bytes: [UInt8]) -> String? {
            guard bytes.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) == UInt8(ascii: "{") else { return nil }
            struct Problem: Decodable { var detail: String?; var title: String? }
            let problem = try? JSONCoding.decoder().decode(Problem.self, from: Data(bytes))
            return problem?.detail ?? problem?.title ?? String(decoding: bytes.prefix(200), as: UTF8.self)
        }

        func run() throws {
            let values = try JSONCoding.decoder().decode(DeviceSimulator.Session.self, from: Data(FileIO.read(session, what: "session")))
            let bytes = try FileIO.read(ckc, what: "CKC")
            if let problem = Self.serverError(bytes) {
                throw CLIError("\(ckc) holds the server's error answer, not a CKC: \(problem)")
            }
            let opened = try DeviceSimulator.openCKC(bytes, session: values)
            try Self.report(opened, session: values, expectContentKey: expectContentKey, contentKeyOut: contentKeyOut)
        }

        /// Prints what an opened CKC holds (never the key), checks it against `expectContentKey` and writes it to
        /// `contentKeyOut` (mode 0600) when asked.
        static func report(_ opened: CKC, session: DeviceSimulator.Session, expectContentKey: String?, contentKeyOut: String?) throws {
            print("CKC opened: R1 matches, \(session.requestedBlocks.count) requested tags returned verbatim")
            print("content IV \(Hex.encode(opened.contentIV))")
            if let duration = opened.duration {
                print("content key duration: lease \(duration.leaseSeconds) s, rental \(duration.rentalSeconds) s, key type \(duration.keyType)")
            }
            if let hdcp = opened.hdcp { print("HDCP: \(hdcp)") }
            if let offline = opened.offlineKey {
                print("offline key: content ID \(Hex.encode(offline.contentID)), storage \(offline.storageSeconds) s, playback \(offline.playbackSeconds) s")
            }
            if let expectContentKey {
                let expected = SecretBytes(try hexOption(expectContentKey, count: 16, name: "--expect-content-key"))
                guard expected == opened.contentKey else { throw CLIError("the content key in the CKC differs from --expect-content-key") }
                print("content key matches the expected key")
            }
            if let contentKeyOut {
                try FileIO.write(opened.contentKey.bytes, to: contentKeyOut, mode: 0o600)
                print("content key written to \(contentKeyOut)")
            }
        }
    }
}
