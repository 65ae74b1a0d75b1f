import Foundation
import SatchelBytes

/// What watches one attempt while it runs, beside the worker and off the engine's isolation: each progress tick
/// reports the progress, stops the attempt when the network became one the rules keep downloads off, and every
/// fourth one notices a pause or a switch-off made by another process. What it found is read once the attempt has
/// ended (``findings``).
final class AttemptWatch: Sendable {
    /// What the watch found that the run loop acts on.
    struct Findings: Sendable {
        /// The network rule that stopped the attempt.
        var networkHold: DownloadFailure?
        /// Another process switched downloads off.
        var switchedOff = false
        /// The index could not be read.
        var storageFailure: DownloadError?
    }

    private let asset: DownloadAsset
    private let index: any DownloadIndexing
    private let network: any NetworkMonitor
    private let rules: Locked<DownloadRules>
    private let sink: EventSink
    private let readyDuration: Double
    private let found = Locked(Findings())

    init(asset: DownloadAsset, index: any DownloadIndexing, network: any NetworkMonitor, rules: Locked<DownloadRules>, sink: EventSink,
         readyDuration: Double) {
        self.asset = asset
        self.index = index
        self.network = network
        self.rules = rules
        self.sink = sink
        self.readyDuration = readyDuration
    }

    /// What the watch has found so far.
    var findings: Findings { found.current }

    /// Reports the asset's progress.
    func report(_ live: LiveProgress) {
        let snapshot = live.snapshot
        sink.emit(.progress(DownloadProgress(assetID: asset.id, plan: asset.plan, complete: snapshot.complete, bytes: snapshot.bytes,
                                             readyDuration: readyDuration)))
    }

    /// One tick (numbered from 1): false stops the attempt.
    func tick(_ live: LiveProgress, number: Int) async -> Bool {
        report(live)
        if let held = QueuePolicy(rules: rules.current).networkHold(network.current) {
            found.withLock { $0.networkHold = held }
            return false
        }
        guard number % 4 == 0 else { return true }
        do {
            let paused = try await index.isPaused(asset.id)
            let setting = try await index.setting("enabled")
            if setting == "false" { found.withLock { $0.switchedOff = true } }
            return paused == false && setting != "false"
        } catch {
            found.withLock { $0.storageFailure = error }
            return false
        }
    }
}
