import ArgumentParser
import Dispatch
import Foundation
import SatchelDevice
import SatchelRights
import SatchelStreams
import Logging
import SatchelAgent
import SatchelBytes
import SatchelDownloads
import SatchelPlayback
import SatchelSystem

/// `satchel play`: the playback proxy for a downloaded asset (files not downloaded yet come from the origin) or
/// an online HLS source. The session URL is the first line on stdout; events go to stderr; it runs until
/// interrupted or, with `--exec`, until the command it started exits.
struct PlayCommand: SatchelAsyncCommand {
    static let configuration = CommandConfiguration(
        commandName: "play",
        abstract: "Serve a downloaded asset, or an online HLS, DASH or Smooth Streaming source, to a player through the loopback playback proxy (decrypted unless --passthrough).")

    @Argument(help: "The asset ID (as `download add` named it, see `satchel download list`), the URL of an HLS playlist, a DASH MPD, a Smooth Streaming manifest or a file to play online, or the path of a local file (a protected file).")
    var asset: String
    @OptionGroup var directory: DownloadDirectoryOptions
    @Option(help: "The proxy's port on 127.0.0.1 (0: any free port).") var port = 0
    @Flag(help: "Keep the protection and the key tags (for players with DRM).") var passthrough = false
    @Option(help: "Run this command (a player) with {url} replaced by the session URL; exit with its status when it ends. Run without a shell: quotes group words, nothing else is interpreted.")
    var exec: String?
    @Option(name: .customLong("token"),
            help: "An entitlement token (or --token-file, $SATCHEL_TOKEN): a license is acquired for its asset first unless one is valid (needs a registered device; never printed).")
    var givenToken: String?
    @OptionGroup var tokenSource: TokenSource
    /// The entitlement token given, from whichever source (``validate()`` has reported a bad one).
    var token: String? { (try? tokenSource.resolve(givenToken)) ?? nil }
    @Option(help: "With --token: the license server (default: the one the device registered with).") var server: String?
    @Option(name: .customLong("license-asset"),
            help: "The asset ID on the license server (default: the token's asset for a URL, the one the download was added with for an asset).")
    var licenseAsset: String?
    @Option(name: .customLong("header"), help: "With a URL: \"Name: value\" sent with every request to the origin (repeatable; never printed).")
    var headers: [String] = []
    @Option(name: .customLong("license-header"),
            help: "With --passthrough: \"Name: value\" added to every key and license request the player makes through the proxy (repeatable).")
    var licenseHeaders: [String] = []
    @Option(name: .customLong("custom-data"), help: "With --passthrough: custom data added to the player's license requests.")
    var customData: String?
    @Option(name: .customLong("license-host"),
            help: "With --passthrough: a host (or host:port) the player's key requests may be forwarded to with the token and --license-header values, besides the license server's (repeatable). Key URIs on other hosts are left as the playlist wrote them.")
    var licenseHosts: [String] = []
    @Option(name: .customLong("language"), help: "An audio language wanted (repeatable): narrows an online source's renditions to it (default: every language) and picks a DASH source's played as HLS.")
    var languages: [String] = []
    @Option(help: "The audio track to start with, by name or language (see --json's audioTracks); the others stay offered for switching.")
    var audio: String?
    @Option(help: "The output the player shows on: internal, airplay, external or analog; a license that does not allow it refuses the session.")
    var output: String?
    @Option(name: .customLong("output-hdcp"), help: "The HDCP the output has: none, type0 or type1 (default none); a license that requires more refuses the session.")
    var outputHDCP: String?
    @Flag(help: "Print, as the first line, a JSON object: url (null when playback is refused), protected, drm, audioTracks, outputControls.")
    var json = false
    @Option(name: .customLong("hold-off"),
            help: "Seconds a player's request waits when the rights end mid-play, for a renewal or a new license (0: refused at once).")
    var holdOff: Double = 15

    /// The output declared (`--output`, `--output-hdcp`), nil when neither is given.
    var outputCapabilities: OutputCapabilities? {
        get throws {
            guard output != nil || outputHDCP != nil else { return nil }
            guard let kind = OutputCapabilities.Kind(rawValue: output ?? "internal") else { throw ValidationError("--output is internal, airplay, external or analog") }
            guard let hdcp = HDCPLevel(rawValue: outputHDCP ?? "none") else { throw ValidationError("--output-hdcp is none, type0 or type1") }
            return OutputCapabilities(hdcp: hdcp, kind: kind)
        }
    }

    /// True when the argument is a URL to play online.
    var isOnline: Bool { asset.hasPrefix("http://") || asset.hasPrefix("https://") }

    /// True when the argument is a file on disk (a protected file, a media file) rather than a downloaded asset's ID.
    var isLocalFile: Bool {
        var directory: ObjCBool = false
        return !isOnline && (asset.contains("/") || asset.hasSuffix(".satchel")) && FileManager.default.fileExists(atPath: asset, isDirectory: &directory)
            && !directory.boolValue
    }

    /// True when the file at `path` is an HLS playlist, a DASH MPD or a Smooth Streaming manifest (by its name or its
    /// first bytes): those play from a URL, their segments beside them.
    static func isManifest(_ path: String) -> Bool {
        let name = URL(fileURLWithPath: path).lastPathComponent.lowercased()
        if ["m3u8", "m3u", "mpd", "ism", "isml"].contains(URL(fileURLWithPath: name).pathExtension) || name == "manifest" { return true }
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let head = String(decoding: (try? handle.read(upToCount: 64)) ?? Data(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return head.hasPrefix("#EXTM3U") || head.hasPrefix("<?xml") || head.hasPrefix("<MPD") || head.hasPrefix("<SmoothStreamingMedia")
    }

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port is 0 to 65535") }
        guard holdOff.isFinite, (0...600).contains(holdOff) else { throw ValidationError("--hold-off is 0 to 600 seconds") }
        if server != nil, try tokenSource.resolve(givenToken) == nil { throw ValidationError("--server goes with --token") }
        if !passthrough, !licenseHeaders.isEmpty || customData != nil || !licenseHosts.isEmpty {
            throw ValidationError("--license-header, --custom-data and --license-host go with --passthrough (the proxy forwards the player's key requests)")
        }
        if !headers.isEmpty, !isOnline { throw ValidationError("--header goes with a URL (a downloaded asset keeps the headers it was added with)") }
        if isOnline, URL(string: asset)?.host == nil { throw ValidationError("\(asset.prefix(200)) is not a URL") }
        if isLocalFile, Self.isManifest(asset) {
            throw ValidationError("\(asset.prefix(200)) is a streaming manifest on disk; play takes a manifest by its URL: serve its folder (for example `python3 -m http.server` in it) and give the manifest's http:// URL, or download it first (satchel download add URL) and play the asset")
        }
        if let exec {
            do { _ = try CommandWords(exec) } catch { throw ValidationError("--exec: \(error.description)") }
        }
        _ = try outputCapabilities
    }

    func execute() async throws {
        let originHeaders = try DownloadOptions.parseHeaders(headers)
        let status = try await directory.withEngine(readOnly: !isOnline) { manager, agent -> Int32 in
            if isLocalFile {
                // A local file's rights: the license asset named, else the token's, else (a protected file) the license that
                // holds its key, else its name without `.satchel`.
                let name = URL(fileURLWithPath: asset).lastPathComponent
                let claimed = token.flatMap(Agent.assetID(inToken:)).flatMap { $0 == "*" ? nil : $0 }
                var byKey: String?
                if licenseAsset == nil, claimed == nil, let agent, let header = await LicenseByKey.header(ofFile: asset) {
                    byKey = try await LicenseByKey.asset(for: header, agent: agent)
                }
                let rights = licenseAsset ?? claimed ?? byKey ?? (name.hasSuffix(".satchel") ? String(name.dropLast(".satchel".count)) : name)
                return try await serve(LocalFileLibrary(path: asset), assetID: rights, licenseAsset: rights, agent: agent)
            }
            guard isOnline, let url = URL(string: asset) else {
                guard let known = try? await manager.asset(asset) else {
                    let ids = ((try? await manager.assets()) ?? []).map(\.id)
                    throw CLIError(ids.isEmpty ? "no downloaded asset \(asset): this data directory has none (satchel download add URL first)"
                                   : "no downloaded asset \(asset); this data directory has: \(ids.prefix(20).joined(separator: ", "))\(ids.count > 20 ? ", …" : "")")
                }
                // A download's rights are those of the license asset it was added with, unless one is named here.
                let added = known.options.license?.assetID
                return try await serve(DownloadLibrary(manager: manager), assetID: asset, licenseAsset: licenseAsset ?? added, agent: agent,
                                       renewalToken: token ?? known.options.license?.token)
            }
            // The session's rights are those of the token's asset; a clear source needs no token.
            let claimed = token.flatMap(Agent.assetID(inToken:)).flatMap { $0 == "*" ? nil : $0 }
            let folder = url.deletingLastPathComponent().lastPathComponent  // …/movie/master.m3u8 → movie
            let assetID = licenseAsset ?? claimed ?? (folder.isEmpty || folder == "/" ? "online" : folder)
            let fetcher = ResourceFetcher(connectTimeout: .seconds(5), readTimeout: .seconds(15))
            do {
                // Online, every language is offered (nothing is fetched before the player asks), unless --language narrows it.
                let offered = (languages.isEmpty ? ["*"] : languages) + (audio.map { [$0] } ?? [])
                let status = try await serve(OnlineLibrary(url: url, options: DownloadOptions(languages: offered, headers: originHeaders), fetcher: fetcher),
                                             assetID: assetID, licenseAsset: nil, agent: agent)
                await fetcher.shutdown()
                return status
            } catch {
                await fetcher.shutdown()
                throw error
            }
        }
        if status != 0 { throw ExitCode(status) }
    }

    /// Acquires a license first when a token is given, opens the session, prints its URL and serves it until
    /// interrupted or until `--exec`'s command ends; answers the exit status.
    private func serve(_ library: any PlaybackLibrary, assetID: String, licenseAsset: String?, agent: Agent?,
                       renewalToken: String? = nil) async throws -> Int32 {
        if let token { try await Self.license(licenseAsset ?? assetID, token: token, server: server, agent: agent) }
        // Pass-through: the player's key requests go through the proxy, which adds the token and the extras.
        let forwarding = passthrough ? try LicenseRequestExtras(headers: try licenseHeaders.map(LicenseRequestExtras.header), customData: customData,
                                                                token: token) : nil
        // Credentials go only to the license server's host and the hosts the user named, never to one the content chose.
        let registered = await agent?.server
        let licenseServer = server ?? registered
        let hosts = (licenseServer.flatMap(PlaybackProxy.Configuration.licenseHost(of:)).map { [$0] } ?? []) + licenseHosts
        // A registered device takes a stream slot from its backplane for the session (the account's stream limit).
        // A license that comes due while the session plays is renewed in the background, with the token given (or the
        // one the download was added with).
        let renewal = renewalToken ?? token
        // A download's kept FairPlay key opens through the device's FairPlay client; every other asset's rights are the agent's.
        let device = try agent.map { ($0, FairPlayKeyring(dataDirectory: $0.dataDirectory, sealing: try DeviceSecretBox(dataDirectory: $0.dataDirectory))) }
        let rights = device.map { agent, keyring in FairPlayRights(inner: RenewingAgentRights(agent: agent) { _ in renewal }, keyring: keyring) }
        let proxy = try PlaybackProxy(library: library, rights: rights, slots: device.map { AgentStreamSlots(agent: $0.0, fairPlay: $0.1) },
                                      configuration: .init(port: port, mode: passthrough ? .passthrough : .decrypt, forwarding: forwarding,
                                                            languages: languages, licenseHosts: hosts, holdOff: .milliseconds(Int64(holdOff * 1000))),
                                      logger: Logger(label: "satchel.playback"))
        // A registered device reports its plays (start, and stop with the seconds played) to its backplane.
        let activity = agent.map(PlaybackActivity.init)
        let events = Task {
            for await event in proxy.events {
                FileHandle.standardError.write(Data("satchel: event: \(event.line)\n".utf8))
                await activity?.observe(event)
            }
        }
        defer { events.cancel() }
        let declaredOutput = try outputCapabilities
        let stop = exec == nil ? SignalWatch.caught() : nil  // before the URL is printed: a stop right after it still closes the session
        let url: String
        do {
            url = try await proxy.open(asset: assetID, licenseAsset: licenseAsset, output: declaredOutput, audio: audio)
        } catch {
            if json, let info = try? await proxy.inspect(asset: assetID, licenseAsset: licenseAsset) {
                // Refused: what the content is, all the same (is it protected, and how), before the reason.
                try Self.printLine(SessionLine(url: nil, info: info))
            }
            stop?.release()
            await proxy.stop()
            if case .notPlayable(.noRights) = error {
                let asset = licenseAsset ?? assetID
                throw CLIError("playback is not allowed: no-rights: this device holds no license for \(asset). Get one with --token TOKEN here, "
                               + "satchel license acquire \(asset) --token TOKEN --data-dir DIR, or download it with one (satchel download add URL --license --token TOKEN)")
            }
            throw error
        }
        if let warning = SystemProxyCheck.warning(environment: ProcessInfo.processInfo.environment) {
            FileHandle.standardError.write(Data("satchel: warning: \(warning)\n".utf8))
        }
        if json, let info = await proxy.info(url: url) {
            try Self.printLine(SessionLine(url: url, info: info))
        } else {
            FileHandle.standardOutput.write(Data((url + "\n").utf8))  // unbuffered: a script reads it at once
        }
        let status: Int32
        if let exec {
            status = try await Self.run(try CommandWords(exec).replacing("{url}", with: url))
        } else {
            await stop?.next()
            status = 0
        }
        await proxy.stop()
        await events.value
        return status
    }

    /// `play --json`'s first line.
    struct SessionLine: Encodable {
        var url: String?
        var info: ContentInfo

        func encode(to encoder: any Encoder) throws {
            enum Keys: String, CodingKey { case url, protected, drm, audioTracks, outputControls }
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(url, forKey: .url)  // null when refused
            try container.encode(info.protected, forKey: .protected)
            try container.encode(info.drm, forKey: .drm)
            try container.encode(info.audioTracks, forKey: .audioTracks)
            try container.encode(info.outputControls, forKey: .outputControls)
        }
    }

    /// One line of JSON on stdout, unbuffered.
    static func printLine(_ value: some Encodable) throws {
        FileHandle.standardOutput.write(try JSONCoding.encoder().encode(value) + Data("\n".utf8))
    }

    /// Acquires a license for `assetID` with `token` unless the device holds one that is valid now.
    static func license(_ assetID: String, token: String, server: String?, agent: Agent?) async throws {
        guard let agent else {
            throw CLIError("--token needs a device registered in the data directory: run satchel agent register first")
        }
        if (try? await agent.rights(asset: assetID).status) == .valid { return }
        _ = try await agent.acquire(asset: assetID, token: token, persistent: false, server: server)
    }

    /// Runs `arguments` (the program first, no shell) until it ends; answers its exit status. A stop signal to
    /// `satchel` ends the program and everything it started.
    static func run(_ arguments: [String]) async throws -> Int32 {
        guard let program = arguments.first else { throw CLIError("--exec names no program") }
        let child: ChildProcess
        do {
            child = try ChildProcess.spawn(program, Array(arguments.dropFirst()), ownGroup: true)
        } catch {
            throw CLIError("cannot run --exec: \(error.description)")
        }
        return await SignalWatch.run(child)
    }
}
