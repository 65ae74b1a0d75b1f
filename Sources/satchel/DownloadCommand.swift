import ArgumentParser
import Foundation
import SatchelBytes
import SatchelDevice
import SatchelRights
import Logging
import SatchelAgent
import SatchelDownloads
import SatchelStreams

/// `satchel download`: the download-to-go queue.
struct DownloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download",
        abstract: "Download HLS, DASH, Smooth Streaming and single files for offline playback.",
        subcommands: [DownloadAdd.self, DownloadRun.self, DownloadList.self, DownloadPause.self, DownloadResume.self, DownloadRemove.self, DownloadMove.self, DownloadWindow.self,
                      DownloadFlush.self, DownloadEnable.self, DownloadDisable.self, DownloadClearRetries.self, DownloadUpdateURL.self, DownloadUpdateToken.self])
}

/// `--data-dir`: where the download index and the assets live.
struct DownloadDirectoryOptions: ParsableArguments {
    @Option(name: .customLong("data-dir"), help: "Data directory (downloads.sqlite, assets/). Default: $SATCHEL_DATA_DIR or ./satchel-data.")
    var dataDirectory: String?
    @OptionGroup var logging: LoggingOptions

    /// Opens the engine, runs `body`, closes the engine. `readOnly` commands create nothing: a data directory
    /// that does not exist is an error.
    func withManager<T>(readOnly: Bool = false, _ configure: (inout DownloadManager.Configuration) -> Void = { _ in },
                        _ body: (DownloadManager) async throws -> T) async throws -> T {
        try await withEngine(readOnly: readOnly, configure) { manager, _ in try await body(manager) }
    }

    /// ``withManager(readOnly:_:_:)`` that also hands `body` the agent of the data directory (nil when no
    /// device is registered there).
    func withEngine<T>(readOnly: Bool = false, network: (any NetworkMonitor)? = nil, _ configure: (inout DownloadManager.Configuration) -> Void = { _ in },
                       afterClose: (Agent) async -> Void = { _ in }, _ body: (DownloadManager, Agent?) async throws -> T) async throws -> T {
        // First: the configuration's logger takes the handler bootstrapped here. The progress lines are the
        // command's own output; the engine's log goes to stderr only when asked.
        try logging.bootstrap(fallback: .critical)
        var configuration = DownloadManager.Configuration(
            dataDirectory: dataDirectory ?? ProcessInfo.processInfo.environment["SATCHEL_DATA_DIR"] ?? "satchel-data")
        if readOnly { try StoreOptions.requireExisting(configuration.dataDirectory) }
        configure(&configuration)
        // The agent of the same data directory, when this device is registered there: the engine is the device's
        // (its steps, the backplane's settings, its events reported).
        let registered = FileManager.default.fileExists(atPath: (configuration.dataDirectory as NSString).appendingPathComponent("device.json"))
        let agent = registered ? try await Agent(dataDirectory: configuration.dataDirectory, logger: Logger(label: "satchel.agent")) : nil
        let engine = try await DeviceEngine.open(agent: agent, configuration: configuration,
                                                 environment: DownloadEnvironment(network: network ?? FixedNetwork.unmetered))
        let result: Result<T, any Error>
        do { result = .success(try await body(engine.downloads, agent)) } catch { result = .failure(error) }
        await engine.close()  // every event the engine emitted is recorded
        if let agent { await afterClose(agent) }
        await agent?.close()
        return try result.get()
    }
}

/// An asset ID argument with the data directory.
struct DownloadTarget: ParsableArguments {
    @Argument(help: "The asset ID.") var id: String
    @OptionGroup var directory: DownloadDirectoryOptions
}

struct DownloadAdd: SatchelAsyncCommand {
    static let configuration = CommandConfiguration(commandName: "add", abstract: "Enqueue an asset (the manifest is fetched and checked now).")
    @Argument(help: "HLS master or media playlist, DASH MPD, Smooth manifest, or a media file.") var url: String
    @OptionGroup var directory: DownloadDirectoryOptions
    @Option(help: "Asset ID (its folder's name). Default: the playlist's or its folder's name in the URL, made unique (movie, movie-2).") var id: String?
    @Option(name: .customLong("max-bitrate"), help: "HLS: highest variant BANDWIDTH (0 = the lowest variant).") var maxBitrate: Int?
    @Option(name: .customLong("max-video-bitrate"), help: "DASH/Smooth: highest video bitrate.") var maxVideoBitrate: Int?
    @Option(name: .customLong("max-audio-bitrate"), help: "DASH/Smooth: highest audio bitrate.") var maxAudioBitrate: Int?
    @Option(name: .customLong("language"), help: "Also download audio/subtitles in this language (repeatable).") var languages: [String] = []
    @Flag(name: .customLong("include-keys"), help: "Download AES-128 key files too.") var includeKeys = false
    @Option(name: .customLong("header"), help: "\"Name: value\" sent with every request for the asset, e.g. a token (repeatable; never printed).")
    var headers: [String] = []
    @Option(name: .customLong("permitted-mime-types"),
            help: "Comma-separated MIME types a single-file asset may have (video/* style; \"\" = no check). Default: video, audio, MP4, octet-stream.")
    var permittedMimeTypes: String?
    @Option(name: .customLong("max-files"), help: "The most files the asset may have; a manifest listing more is refused (default 200000).") var maxFiles: Int?
    @Option(help: "Publish date (ISO 8601): hidden until then.") var publish: String?
    @Option(help: "Expiry date (ISO 8601, or YYYY-MM-DD).") var expiry: String?
    @Option(name: .customLong("expiry-after-download"),
            help: "Seconds the asset stays after its download completes (default: the backplane's setting, once synced).") var expiryAfterDownload: UInt32?
    @Option(name: .customLong("expiry-after-play"),
            help: "Seconds the asset stays after its first play (default: the backplane's setting, once synced).") var expiryAfterPlay: UInt32?
    @Flag(help: "Acquire a persistent license when the download starts (the device must be registered in --data-dir: satchel agent register).")
    var license = false
    @Option(help: "With --license: the license server (default: the one the device registered with).") var server: String?
    @Option(help: "With --license: the entitlement token (or --token-file, $SATCHEL_TOKEN; kept with the asset, never printed).") var token: String?
    @OptionGroup var tokenSource: TokenSource
    @Option(name: .customLong("license-asset"), help: "With --license: the asset ID on the license server (default: --id).") var licenseAsset: String?
    @OptionGroup var fairPlay: FairPlayDownloadOptions
    @Option(help: "The feed the asset belongs to (with --id, its asset ID in the feed): it then counts toward that feed's quota on this device, and may be reset (its files deleted) to make room for newer items.")
    var feed: String?
    @Option(help: "A description of the asset, kept with it and shown by download list.") var description: String?
    @Option(name: .customLong("user-info"), help: "The app's own values for the asset: a JSON object, kept with it and shown by download list --json.")
    var userInfo: String?
    @Option(help: "Its place in the queue (0: first; default: last).") var position: Int?

    func execute() async throws {
        var window = AvailabilityWindow(publishDate: try publish.map { try parseDate($0, option: "--publish") },
                                        expiryDate: try expiry.map { try parseDate($0, option: "--expiry") },
                                        expiryAfterDownload: expiryAfterDownload, expiryAfterPlay: expiryAfterPlay)
        var options = DownloadOptions(maxBitrate: maxBitrate, maxVideoBitrate: maxVideoBitrate, maxAudioBitrate: maxAudioBitrate,
                                      languages: languages, includeEncryptionKeys: includeKeys,
                                      permittedMimeTypes: try permittedMimeTypes.map(MIMEType.parseList), maxResources: maxFiles,
                                      headers: try DownloadOptions.parseHeaders(headers),
                                      license: license ? LicenseRequest(server: server, token: try tokenSource.resolve(token), assetID: licenseAsset,
                                                                        fairPlay: try fairPlay.options()) : nil,
                                      feed: feed.map { FeedMembership(feedID: $0, assetID: id ?? "", published: Date()) })
        if feed != nil, id == nil { throw CLIError("--feed needs --id: the item's asset ID in the feed") }
        if let position, position < 0 { throw CLIError("--position is 0 or more") }
        options.description = description
        if let userInfo {
            guard userInfo.utf8.count <= 16_384, let values = try? JSONCoding.decoder().decode([String: JSONValue].self, from: Data(userInfo.utf8)) else {
                throw CLIError("--user-info is a JSON object of at most 16 KiB, such as {\"season\": 2}")
            }
            options.userInfo = values
        }
        if let maxFiles, maxFiles < 1 { throw CLIError("--max-files must be positive") }
        if !license, server != nil || token != nil || tokenSource.tokenFile != nil || licenseAsset != nil || fairPlay.fpsCertificate != nil {
            throw CLIError("--server, --token, --token-file, --license-asset and --fps-certificate go with --license")
        }
        let asset = try await directory.withEngine { manager, agent in
            // The backplane's global defaults (seed 003: EAD and EAP "transmitted to all SDK instances") for what is not given.
            if let defaults = try await agent?.backplane.status().settings {
                window.expiryAfterDownload = window.expiryAfterDownload ?? defaults.expiryAfterDownload
                window.expiryAfterPlay = window.expiryAfterPlay ?? defaults.expiryAfterPlay
            }
            let added = try await manager.add(url: url, id: id, options: options, window: window)
            if let position { try await manager.move(added.id, to: position) }
            return added
        }
        print("\(asset.id)\t\(asset.plan.format.rawValue)\t\(asset.plan.resources.count) files\t\(asset.url)")
    }

    private func parseDate(_ text: String, option: String) throws -> Date {
        if let date = ISODate.date(text) { return date }
        throw CLIError("\(option): expected an ISO 8601 date such as 2026-12-31 or 2026-12-31T12:00:00Z")
    }
}

struct DownloadRun: SatchelAsyncCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Work through the queue in the foreground.",
        discussion: "Exit status: 0 when every asset is complete; 1 when one is blocked (errored 3 passes, or fatally); 3 when some wait (paused, a rule, downloads disabled); 4 when the index could not be read or written (a full disk). Ctrl-C (or another stop signal) stops it: what was downloading goes back to the queue with its bytes kept (exit 3).")
    @OptionGroup var directory: DownloadDirectoryOptions
    @Option(help: "Files of one asset downloaded at once when an attempt begins.") var parallel: Int = 16
    @Option(name: .customLong("max-parallel"), help: "The most files at once an attempt grows to while more connections bring more throughput (= --parallel: fixed).")
    var maxParallel: Int = 48
    @Option(help: "MB that must stay free on the disk (headroom).") var headroom: Int64 = 1024
    @Option(name: .customLong("max-storage"), help: "MB the downloads may use in all.") var maxStorage: Int64?
    @Option(name: .customLong("max-assets"), help: "Downloaded assets kept at once.") var maxAssets: Int = 100
    @Option(name: .customLong("retry-delay"), help: "Seconds between attempts of one asset.") var retryDelay: Double = 1
    @Option(name: .customLong("low-speed-limit"), help: "Bytes/s below which a transfer fails (retried); 0 = off.") var lowSpeedLimit: Int = 1024
    @Option(name: .customLong("low-speed-time"), help: "Seconds the transfer may stay below --low-speed-limit.") var lowSpeedTime: Int = 30
    @OptionGroup var network: NetworkOptions

    func execute() async throws {
        guard parallel > 0, parallel <= 256, maxParallel > 0, maxParallel <= 256, headroom >= 0, headroom < (1 << 43), maxAssets >= 0, (0...86_400).contains(retryDelay),
              (maxStorage ?? 0) >= 0, (maxStorage ?? 0) < (1 << 43), lowSpeedLimit >= 0, (1...86_400).contains(lowSpeedTime) else {
            throw CLIError("--parallel and --max-parallel must be 1 to 256; sizes, delays and limits not negative (--low-speed-time 1 to 86400 s)")
        }
        let rules = try network.applied(to: DownloadRules(maxDownloadedAssets: maxAssets, maxStorageAllowed: maxStorage.map { $0 << 20 } ?? .max,
                                                      headroom: headroom << 20))
        let synced = Locked(false), interrupted = Locked(false)
        let stops = SignalWatch.caught()
        defer { stops.release() }
        let summary = try await directory.withEngine(network: try network.monitor(), { configuration in
            configuration.rules = rules
            configuration.parallelism = parallel
            configuration.maxParallelism = max(maxParallel, parallel)
            configuration.retryDelay = .milliseconds(Int(retryDelay * 1000))
            configuration.passDelay = .milliseconds(Int(retryDelay * 2000))
            configuration.lowSpeed = LowSpeedLimit(bytesPerSecond: lowSpeedLimit, period: .seconds(lowSpeedTime))
        }, afterClose: { agent in
            // The run's events go at once when the backplane answered the sync before it (else at the next sync).
            if synced.current { _ = try? await agent.activity.send() }
        }) { manager, agent in
            if let agent {
                let reached = try await BackplaneCommands.syncBeforeWork(agent, manager, rules: rules)
                synced.withLock { $0 = reached }
            }
            let events = manager.events()
            let printer = Task { await ProgressPrinter().consume(events) }
            let work = Task { await manager.run() }
            // Ctrl-C (or a stop signal) ends the run the way the engine stops: the asset being downloaded goes back to
            // the queue with its bytes kept, and the run says so.
            let stop = Task {
                await stops.next()
                guard !Task.isCancelled else { return }  // the run ended by itself
                interrupted.withLock { $0 = true }
                work.cancel()
            }
            let summary = await withTaskCancellationHandler { await work.value } onCancel: { work.cancel() }
            stop.cancel()
            printer.cancel()
            return summary
        }
        if interrupted.current {
            FileHandle.standardError.write(Data("\nsatchel: stopped; what was downloading is queued with its bytes kept: `satchel download run` picks it up again\n".utf8))
        }
        let line = summary.states.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.value) \($0.key.rawValue)" }.joined(separator: ", ")
        FileHandle.standardError.write(Data("satchel: \(line.isEmpty ? "queue empty" : line)\(summary.enabled ? "" : " (downloads disabled)")\n".utf8))
        if let failure = summary.storageFailure {
            FileHandle.standardError.write(Data("satchel: error: the download index could not be written (\(failure)); stopped\n".utf8))
            throw ExitCode(4)
        }
        if summary.allComplete && summary.enabled { return }
        throw ExitCode((summary.states[.blocked] ?? 0) > 0 ? 1 : 3)
    }
}

/// Draws one progress line per asset on stderr.
struct ProgressPrinter {
    private let interactive = isatty(2) != 0

    func consume(_ events: AsyncStream<DownloadEvent>) async {
        var lastLine = Date.distantPast
        for await event in events {
            switch event {
            case let .progress(progress):
                guard interactive || Date().timeIntervalSince(lastLine) > 2 else { continue }
                lastLine = Date()
                let width = 30, filled = Int(progress.fraction * Double(width))
                let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
                let line = String(format: "%@ [%@] %3.0f%% %.1f MB %d/%d files, %.0f/%.0f s cached", progress.assetID, bar, progress.fraction * 100,
                                  Double(progress.bytes) / 1_048_576, progress.completedFiles, progress.totalFiles,
                                  progress.cachedDuration, progress.totalDuration)
                write(interactive ? "\r\(line)\u{1B}[K" : line + "\n")
            case let .finished(id): write((interactive ? "\n" : "") + "\(id): complete\n")
            case let .error(id, failure, willRetry):
                write((interactive ? "\n" : "") + "\(id): \(failure)\(willRetry ? " (will retry)" : " (blocked)")\(Self.remedy(id, failure))\n")
            case let .warning(id, message): write((interactive ? "\n" : "") + "\(id): warning: \(message)\n")
            case let .authorizationRequired(id, status):
                write((interactive ? "\n" : "") + "\(id): the origin answered \(status); give it a fresh URL or token with `satchel download update-url`\n")
            case let .damaged(id, reason): write("\(id): damaged index record (\(reason)); its files are kept\n")
            case .dataStoreUpgradeBegan: write("upgrading the download index from an earlier version…\n")
            case let .dataStoreUpgradeFinished(count): write("download index upgraded (\(count) assets)\n")
            case let .stateChanged(id, .waiting): write("\(id): waiting for a rule\n")
            case let .expiredAssetsReset(ids): write("expired and deleted: \(ids.joined(separator: ", "))\n")
            case let .storageFailed(message): write((interactive ? "\n" : "") + "index failure: \(message)\n")
            default: break
            }
        }
    }

    private func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// What to do about `failure`, when a command does it.
    static func remedy(_ id: String, _ failure: DownloadFailure) -> String {
        guard case let .license(problem, _, _) = failure, ["invalid-entitlement", "missing-entitlement"].contains(problem) else { return "" }
        return "; give it a fresh token with `satchel download update-token \(id) --token-file FILE`"
    }
}

struct DownloadList: SatchelAsyncCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the assets with their state and progress.")
    @OptionGroup var directory: DownloadDirectoryOptions
    @Flag(help: "Print JSON.") var json = false
    @Flag(help: "Only assets inside their availability window.") var available = false

    struct Row: Encodable {
        var id: String, url: String, format: String, state: String, paused: Bool, retryCount: Int
        var failure: String?, path: String, progress: DownloadProgress?, window: AvailabilityWindow?
        var completedAt: Date?, firstPlayAt: Date?
        /// The feed it belongs to, and its title there.
        var feed: String?, title: String?
        /// The app's description and values.
        var description: String?, userInfo: [String: JSONValue]?
    }

    func execute() async throws {
        let rows = try await directory.withManager(readOnly: true) { manager in
            var rows: [Row] = []
            for asset in try await manager.assets(availabilityFilter: available) {
                rows.append(Row(id: asset.id, url: asset.url, format: asset.plan.format.rawValue, state: asset.state.rawValue, paused: asset.isPaused,
                                retryCount: asset.retryCount, failure: asset.failure?.description,
                                path: manager.store.path(asset.id, asset.plan.mainPath), progress: try await manager.progress(asset.id),
                                window: asset.window, completedAt: asset.completedAt, firstPlayAt: asset.firstPlayAt,
                                feed: asset.options.feed?.feedID, title: asset.options.feed?.title, description: asset.options.description,
                                userInfo: asset.options.userInfo))
            }
            // A record that cannot be read is shown, never hidden: its files are still there.
            for record in try await manager.damagedAssets() {
                rows.append(Row(id: record.id, url: "", format: "", state: "damaged", paused: false, retryCount: 0, failure: record.reason,
                                path: manager.store.path(record.id, ""), progress: nil, window: nil))
            }
            return rows
        }
        if json {
            print(String(decoding: try JSONCoding.encoder(.pretty).encode(rows), as: UTF8.self))
            return
        }
        for row in rows {
            let state = row.paused ? "\(row.state),paused" : row.state
            print(String(format: "%@\t%@\t%@\t%3.0f%%\t%.1f MB\t%@%@", row.id, row.format, state, (row.progress?.fraction ?? 0) * 100,
                         Double(row.progress?.bytes ?? 0) / 1_048_576, row.path, row.failure.map { "\t\($0)" } ?? ""))
        }
    }
}

struct DownloadPause: SatchelAsyncCommand {
    static let configuration = CommandConfiguration(commandName: "pause", abstract: "Pause one asset (a running `download run` stops it within a second).")
    @OptionGroup var target: DownloadTarget
    func execute() async throws { try await target.directory.withManager { try await $0.pause(target.id) } }
}

struct DownloadResume: SatchelAsyncCommand {
    static let configuration = CommandConfiguration(commandName: "resume", abstract: "Resume a paused asset.")
    @OptionGroup var target: DownloadTarget
    func execute() async throws { try await target.directory.withManager { try await $0.resume(target.id) } }
}

struct DownloadRemove: SatchelAsyncCommand {
    static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove one asset and delete its files.")
    @OptionGroup var target: DownloadTarget
    func execute() async throws { try await target.directory.withManager { try await $0.remove(target.id) } }
}

struct DownloadUpdateURL: SatchelAsyncCommand {
    static let configuration = CommandConfiguration(
        commandName: "update-url",
        abstract: "Give an asset a fresh URL or token (after a 401/403); its downloaded files stay and it resumes from them.")
    @OptionGroup var target: DownloadTarget
    @Option(help: "The asset's new URL (file URLs under its folder move with it; a query such as a CDN token is carried over).")
    var url: String?
    @Option(name: .customLong("header"), help: "\"Name: value\" replacing the asset's headers (repeatable; never printed).")
    var headers: [String] = []

    func execute() async throws {
        guard url != nil || !headers.isEmpty else { throw ValidationError("give --url, --header, or both") }
        let parsed = headers.isEmpty ? nil : try DownloadOptions.parseHeaders(headers)
        try await target.directory.withManager { try await $0.updateURL(target.id, url: url, headers: parsed) }
    }
}

struct DownloadUpdateToken: SatchelAsyncCommand {
    static let configuration = CommandConfiguration(
        commandName: "update-token",
        abstract: "Give an asset added with --license a fresh entitlement token (the one it was added with expired); it resumes where it was.")
    @OptionGroup var target: DownloadTarget
    @Option(help: "The new token (or --token-file, $SATCHEL_TOKEN; kept sealed with the asset, never printed).") var token: String?
    @OptionGroup var tokenSource: TokenSource

    func execute() async throws {
        let fresh = try tokenSource.required(token)
        try await target.directory.withManager { try await $0.updateLicenseToken(target.id, token: fresh) }
        print("\(target.id): a fresh entitlement token; it is queued again")
    }
}

struct DownloadClearRetries: SatchelAsyncCommand {
    static let configuration = CommandConfiguration(commandName: "clear-retries", abstract: "Let a blocked asset be tried again.")
    @OptionGroup var target: DownloadTarget
    func execute() async throws { try await target.directory.withManager { try await $0.clearRetryCount(target.id) } }
}

struct DownloadFlush: SatchelAsyncCommand {
    static let configuration = CommandConfiguration(commandName: "flush", abstract: "Remove every asset not yet complete (complete ones stay).")
    @OptionGroup var directory: DownloadDirectoryOptions
    func execute() async throws { try await directory.withManager { try await $0.flush() } }
}

struct DownloadEnable: SatchelAsyncCommand {
    static let configuration = CommandConfiguration(commandName: "enable", abstract: "Switch downloading on (persists).")
    @OptionGroup var directory: DownloadDirectoryOptions
    func execute() async throws { try await directory.withManager { try await $0.setEnabled(true) } }
}

struct DownloadDisable: SatchelAsyncCommand {
    static let configuration = CommandConfiguration(commandName: "disable", abstract: "Switch downloading off (persists; a running `download run` stops).")
    @OptionGroup var directory: DownloadDirectoryOptions
    func execute() async throws { try await directory.withManager { try await $0.setEnabled(false) } }
}
