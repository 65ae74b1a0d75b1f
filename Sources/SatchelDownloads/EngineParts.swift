import Foundation
import Logging
import SatchelBytes

/// What the engine's roles work with and never change: the index, the files, the fetcher, the steps before every
/// attempt, the clock and network, and the configuration's fixed parts. Each role holds a copy; none holds another
/// role's state.
struct EngineParts: Sendable {
    let index: any DownloadIndexing
    let store: any AssetStoring
    let fetcher: any ResourceFetching
    let steps: [any DownloadStep]
    let environment: DownloadEnvironment
    /// The configuration the engine opened with; its rules may change since (``StorageUsage/rules`` holds those).
    let configuration: DownloadManager.Configuration

    var logger: Logger { configuration.logger }
    var now: Date { environment.clock.now }
}

/// Where the engine's events go: logged, then to every subscriber. Sendable, so an attempt's watch reports from
/// wherever it runs.
struct EventSink: Sendable {
    let hub: DownloadEventHub
    let logger: Logger

    func emit(_ event: DownloadEvent) {
        EngineLog.log(event, to: logger)
        hub.emit(event)
    }
}

/// The engine's events and its status, reported on each change. Owned by the engine; every role reports through it.
final class EngineReporter {
    let sink: EventSink
    private(set) var status: EngineStatus = .idle

    init(sink: EventSink) {
        self.sink = sink
    }

    func emit(_ event: DownloadEvent) {
        sink.emit(event)
    }

    /// Sets the status, reported when it changes.
    func setStatus(_ new: EngineStatus) {
        guard new != status else { return }
        status = new
        emit(.engineStatusChanged(new))
    }
}

/// The attempt in progress, if any: its asset, the signal that stops it and the one it raises when it has ended.
/// The run loop begins and ends attempts; a change to the queue stops the one at its asset.
final class AttemptSlot {
    typealias Control = (id: String, stop: StopSignal, ended: StopSignal)
    private(set) var current: Control?

    /// The asset being downloaded now.
    var assetID: String? { current?.id }

    /// Starts the attempt at `id`.
    func begin(_ id: String) -> Control {
        let control = (id: id, stop: StopSignal(), ended: StopSignal())
        current = control
        return control
    }

    /// Ends the attempt `control` began: its waiters wake, and the slot empties unless another has begun since.
    func end(_ control: Control) {
        control.ended.raise()
        if current?.id == control.id { current = nil }
    }

    /// Stops the attempt at `id` (any attempt when nil), if one is in progress, and waits until it has ended.
    nonisolated(nonsending) func stop(ifItIs id: String? = nil) async {
        guard let current, id == nil || current.id == id else { return }
        current.stop.raise()
        await current.ended.wait()
    }
}

/// The bytes the engine's files use (scanned once, then counted as files come and go) and the storage rules they
/// are held to (the rules may change while the engine runs).
final class StorageUsage {
    private let store: any AssetStoring
    private let environment: DownloadEnvironment
    private var used: Int64?
    /// The download rules in force, read by an attempt's watch as it runs.
    let rulesInForce: Locked<DownloadRules>

    init(store: any AssetStoring, environment: DownloadEnvironment, rules: DownloadRules) {
        self.store = store
        self.environment = environment
        rulesInForce = Locked(rules)
    }

    /// The download rules in force.
    var rules: DownloadRules {
        get { rulesInForce.current }
        set { rulesInForce.withLock { $0 = newValue } }
    }

    /// The bytes used now.
    var current: Int64 {
        if let used { return used }
        let scanned = store.usage()
        used = scanned
        return scanned
    }

    /// A budget for writing more, from what is used now.
    func budget() -> DownloadBudget {
        let (root, environment) = (store.root, environment)
        return DownloadBudget(used: current, rules: rules, freeSpace: { environment.freeSpace(root) })
    }

    /// Takes what a budget used as the count.
    func settle(_ budget: DownloadBudget) {
        used = budget.usedBytes
    }

    /// Files were deleted: the next read scans again.
    func forget() {
        used = nil
    }
}
