import Foundation
import SatchelDownloads
import SatchelPackager
import SatchelTestSupport
import Testing

/// A loopback origin serving a package made by the packager, and engines over a fresh data directory.
struct DownloadWorld {
    let directory: URL
    let site: URL
    let origin: TestOrigin

    /// Packages the shared test clip into `site/<name>/` (HLS: master.m3u8, CMAF: manifest.mpd) and starts the origin.
    static func make(_ label: String, format: PackageFormat = .hlsTS, scheme: PackageScheme = .clear, seconds: Int = 6,
                     segmentDuration: Double = 1) async throws -> DownloadWorld {
        let directory = try TestMedia.temporaryDirectory("engine-\(label)")
        let site = directory.appendingPathComponent("site")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        let origin = try await TestOrigin.start(root: site)
        let world = DownloadWorld(directory: directory, site: site, origin: origin)
        try await TestMedia.offloaded { try world.package("asset", format: format, scheme: scheme, seconds: seconds, segmentDuration: segmentDuration) }
        return world
    }

    /// Packages the test clip into `site/<name>`; AES-128 keys are served from `site/keys/<kid>.key`.
    func package(_ name: String, format: PackageFormat, scheme: PackageScheme, seconds: Int = 6, segmentDuration: Double = 1) throws {
        let input = try TestMedia.make("engine-source-\(seconds)", seconds: seconds)
        let output = site.appendingPathComponent(name)
        _ = try Packager(options: PackageOptions(inputs: [input.path], output: output.path, format: format, scheme: scheme,
                                                 keyURI: origin.url("keys/{kid}.key"), segmentDuration: segmentDuration)).run()
        if scheme == .aes128 {
            let keys = site.appendingPathComponent("keys")
            try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: true)
            for key in try KeyFile.read(output.path + ".keys.json").contentKeys() {
                try Data(key.key.bytes).write(to: keys.appendingPathComponent("\(key.keyID.hex).key"))
            }
        }
        try? FileManager.default.removeItem(atPath: output.path + ".keys.json")
    }

    var dataDirectory: String { directory.appendingPathComponent("data").path }

    /// An engine with quick retries and a read timeout short for a download, long enough for a loaded test machine.
    func manager(rules: DownloadRules = DownloadRules(headroom: 0), environment: DownloadEnvironment = DownloadEnvironment(network: FixedNetwork.unmetered),
                 parallelism: Int = 4, maximumAssets: Int = 10_000) async throws -> DownloadManager {
        var configuration = DownloadManager.Configuration(dataDirectory: dataDirectory, rules: rules, parallelism: parallelism, maxParallelism: parallelism,
                                                          retryDelay: .milliseconds(10), passDelay: .milliseconds(10),
                                                          readTimeout: .seconds(10), progressInterval: .milliseconds(50))
        configuration.maximumAssets = maximumAssets
        return try await DownloadManager(configuration: configuration, environment: environment)
    }

    /// The local directory of an asset.
    func assetDirectory(_ id: String) -> URL {
        directory.appendingPathComponent("data/assets/\(id)")
    }

    /// Relative paths of the regular files under `url`.
    static func files(under url: URL) -> [String] { TestMedia.files(under: url) }

    /// Every downloaded media file (not a manifest) of an asset is byte-identical to the origin's file at the same path.
    func expectMediaMatchesOrigin(_ id: String, originDirectory: String = "asset", sourceLocation: SourceLocation = #_sourceLocation) throws {
        let local = assetDirectory(id)
        let media = Self.files(under: local).filter { !$0.hasPrefix(".satchel/") && !$0.hasSuffix(".m3u8") && !$0.hasSuffix(".mpd") && !$0.hasSuffix("Manifest") }
        #expect(!media.isEmpty, sourceLocation: sourceLocation)
        #expect(!media.contains { $0.hasSuffix(".part") }, "no partial file is left", sourceLocation: sourceLocation)
        for path in media {
            let parts = path.split(separator: "/")
            let originFile = parts.first == "external" ? site.appendingPathComponent(parts.dropFirst(2).joined(separator: "/"))
                : site.appendingPathComponent(originDirectory).appendingPathComponent(path)
            #expect(try Data(contentsOf: local.appendingPathComponent(path)) == (try Data(contentsOf: originFile)), "\(path)",
                    sourceLocation: sourceLocation)
        }
    }

    /// The sum of the sizes of an asset's media files, whole and partial (what progress should report; not manifests
    /// nor the engine's own plan).
    func mediaBytes(_ id: String) -> Int64 {
        let local = assetDirectory(id)
        return Self.files(under: local).filter { !$0.hasPrefix(".satchel/") && !$0.hasSuffix(".m3u8") && !$0.hasSuffix(".mpd") && !$0.hasSuffix("Manifest") }
            .reduce(0) { $0 + ((try? FileManager.default.attributesOfItem(atPath: local.appendingPathComponent($1).path)[.size] as? Int64) ?? 0) }
    }
}

/// Collects a manager's events.
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [DownloadEvent] = []
    private var task: Task<Void, Never>?

    init(_ manager: DownloadManager) async {
        let stream = manager.events()
        task = Task { [weak self] in
            for await event in stream { self?.append(event) }
        }
    }

    private func append(_ event: DownloadEvent) { lock.withLock { stored.append(event) } }

    /// The events so far, once delivery has caught up (no new event for 50 ms, at most 2 s of waiting):
    /// the stream delivers on its own task, a little after the engine call that caused them returns.
    var events: [DownloadEvent] {
        get async {
            var count = -1
            for _ in 0..<40 {
                let now = lock.withLock { stored.count }
                if now == count { break }
                count = now
                try? await Task.sleep(for: .milliseconds(50))
            }
            return lock.withLock { stored }
        }
    }

    /// Waits (at most 10 s) until an event matching `predicate` has been delivered; false if none came.
    func waitUntil(_ predicate: @escaping (DownloadEvent) -> Bool) async -> Bool {
        for _ in 0..<1000 {
            if lock.withLock({ stored.contains(where: predicate) }) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    /// Waits until the first progress with bytes on disk.
    func waitForBytes() async -> Bool {
        await waitUntil { if case let .progress(progress) = $0 { return progress.bytes > 0 } else { return false } }
    }

    var errors: [(DownloadFailure, Bool)] {
        get async { await events.compactMap { if case let .error(_, failure, retry) = $0 { return (failure, retry) } else { return nil } } }
    }

    var warnings: [String] {
        get async { await events.compactMap { if case let .warning(_, message) = $0 { return message } else { return nil } } }
    }

    var progress: [DownloadProgress] {
        get async { await events.compactMap { if case let .progress(progress) = $0 { return progress } else { return nil } } }
    }
}

/// A value tests change while the engine runs (fake clock, free space, network).
final class Knob<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value

    init(_ value: Value) { stored = value }

    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
