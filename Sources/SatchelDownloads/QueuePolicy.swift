import Foundation

/// What the engine sees around it at one instant: the inputs of a pass over the queue besides the queue.
public struct QueueEnvironment: Sendable, Equatable {
    /// The network the device is on.
    public var network: NetworkType
    /// Free bytes on the volume (nil when unknown).
    public var freeSpace: Int64?
    /// Bytes the engine's files use.
    public var usedBytes: Int64
    /// The time.
    public var now: Date

    /// An environment.
    public init(network: NetworkType, freeSpace: Int64?, usedBytes: Int64, now: Date) {
        self.network = network
        self.freeSpace = freeSpace
        self.usedBytes = usedBytes
        self.now = now
    }
}

/// The engine's next step, decided by `QueuePolicy/next(queue:environment:visited:)`.
package enum QueueAction: Sendable, Equatable {
    /// These assets' windows have closed: delete their files and mark them expired.
    case expire([String])
    /// A rule holds this asset now: mark it waiting with the rule as its reason.
    case hold(String, DownloadFailure)
    /// Download this asset (up to three attempts).
    case download(String)
    /// Nothing more in this pass.
    case endOfPass
}

/// What one attempt's result means for the asset under the Rule of Threes.
package enum AttemptOutcome: Sendable, Equatable {
    /// Every file is on disk.
    case complete
    /// Stopped by a pause, removal, switch-off or shutdown: back to the queue, nothing counted.
    case stopped
    /// A rule stopped it (storage, headroom, count, network): it waits, nothing counted.
    case wait(DownloadFailure)
    /// A failure retrying cannot heal: blocked until `clearRetryCount`.
    case block(DownloadFailure)
    /// Another attempt in this pass follows.
    case retry(DownloadFailure)
    /// The pass's third attempt failed: one more errored pass is counted; blocked after the third.
    case endPass(DownloadFailure, blocked: Bool)
}

/// The queue's rules as pure functions of values: which asset goes next, whether a rule holds it, and what
/// an attempt's result does to it. No I/O: the ``DownloadManager`` gathers the values and carries out the
/// answers.
package struct QueuePolicy: Sendable, Equatable {
    /// Attempts per asset in one pass through the queue.
    package static let attemptsPerPass = 3
    /// Errored passes after which an asset is blocked.
    package static let passesBeforeBlocked = 3

    /// The download rules.
    package var rules: DownloadRules

    /// A policy under `rules`.
    package init(rules: DownloadRules) {
        self.rules = rules
    }

    /// True for an asset a pass should work on: not paused, and queued, downloading (interrupted) or waiting.
    package static func isDownloadable(_ asset: DownloadAsset) -> Bool {
        !asset.isPaused && [.queued, .downloading, .waiting].contains(asset.state)
    }

    /// True when the asset's availability window has closed at `now` (and it is not already expired).
    package static func hasExpired(_ asset: DownloadAsset, at now: Date) -> Bool {
        guard asset.state != .expired else { return false }
        return asset.window.evaluate(completedAt: asset.completedAt, firstPlayAt: asset.firstPlayAt, at: now).status == .expired
    }

    /// The asset as a reader sees it at `now`: an asset whose window has closed reads as expired even before
    /// the engine has deleted its files.
    package static func presented(_ asset: DownloadAsset, at now: Date) -> DownloadAsset {
        guard hasExpired(asset, at: now) else { return asset }
        var shown = asset
        shown.state = .expired
        shown.failure = nil
        return shown
    }

    /// The rule that keeps downloads off `network` (checked before an asset starts and during its download), or nil.
    package func networkHold(_ network: NetworkType) -> DownloadFailure? {
        switch network {
        case .none: return .networkUnavailable(.none)
        case .cellular where !rules.downloadOverCellular: return .networkUnavailable(.cellular)
        case .unknown where rules.meteredUnknown == .deny && !rules.downloadOverCellular: return .networkUnavailable(.unknown)
        default: return nil
        }
    }

    /// The rule that keeps `asset` from starting now, or nil.
    package func hold(for asset: DownloadAsset, queue: [DownloadAsset], environment: QueueEnvironment) -> DownloadFailure? {
        if let held = networkHold(environment.network) { return held }
        let complete = queue.filter { $0.state == .complete && $0.id != asset.id }.count
        if complete >= rules.maxDownloadedAssets { return .maxDownloadedAssets(rules.maxDownloadedAssets) }
        if environment.usedBytes >= rules.maxStorageAllowed {
            return .storageLimit(usedBytes: environment.usedBytes, limit: rules.maxStorageAllowed)
        }
        if let free = environment.freeSpace, free < rules.headroom { return .headroom(freeBytes: free, headroom: rules.headroom) }
        // An asset not started must fit whole (seed 003 "Configure Download Rules"): its planned size — every file's
        // when the plan knows them, else estimated from its tracks' declared bit rates — under both rules.
        if asset.state == .queued, let planned = asset.plannedBytes ?? (asset.plan.expectedBytes ?? asset.plan.estimatedBytes).map(Int64.init), planned > 0 {
            var available = rules.maxStorageAllowed - environment.usedBytes
            if let free = environment.freeSpace { available = min(available, free - rules.headroom) }
            if planned > available { return .doesNotFit(neededBytes: planned, availableBytes: available) }
        }
        return nil
    }

    /// The next step of a pass: expiries first, then the first downloadable asset in queue order that this
    /// pass has not `visited`, held when a rule says so.
    package func next(queue: [DownloadAsset], environment: QueueEnvironment, visited: Set<String>) -> QueueAction {
        let expired = queue.filter { Self.hasExpired($0, at: environment.now) }.map(\.id)
        if !expired.isEmpty { return .expire(expired) }
        let ordered = queue.sorted { $0.position < $1.position }
        guard let asset = ordered.first(where: { Self.isDownloadable($0) && !visited.contains($0.id) }) else { return .endOfPass }
        if let rule = hold(for: asset, queue: queue, environment: environment) { return .hold(asset.id, rule) }
        return .download(asset.id)
    }

    /// What attempt number `attempt` (1-based) ending with `failure` (nil: success) means for an asset that
    /// has errored in `retryCount` passes so far.
    package static func outcome(of failure: DownloadFailure?, attempt: Int, retryCount: Int) -> AttemptOutcome {
        guard let failure else { return .complete }
        if failure == .cancelled { return .stopped }
        if failure.isRuleLimit { return .wait(failure) }
        if failure.isFatal { return .block(failure) }
        guard attempt >= attemptsPerPass else { return .retry(failure) }
        return .endPass(failure, blocked: retryCount + 1 >= passesBeforeBlocked)
    }

    /// The asset after `outcome`, completed at `now` when it completed.
    package static func apply(_ outcome: AttemptOutcome, to asset: DownloadAsset, now: Date) -> DownloadAsset {
        var next = asset
        switch outcome {
        case .complete:
            next.state = .complete
            next.failure = nil
            next.completedAt = now
        case .stopped:
            next.state = .queued
        case let .wait(rule):
            next.state = .waiting
            next.failure = rule
        case let .block(failure):
            next.state = .blocked
            next.failure = failure
        case let .retry(failure):
            next.state = .downloading
            next.failure = failure
        case let .endPass(failure, blocked):
            next.retryCount += 1
            next.state = blocked ? .blocked : .queued
            next.failure = failure
        }
        return next
    }

    /// True when `outcome` leaves the asset for a later pass (the pass had an error worth another pass).
    package static func wantsAnotherPass(_ outcome: AttemptOutcome) -> Bool {
        if case let .endPass(_, blocked) = outcome { return !blocked }
        return false
    }
}
