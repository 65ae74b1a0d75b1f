import Foundation
import SatchelAgent
import SatchelBackplane
import SatchelBytes
import SatchelDownloads
import SatchelPlayback

/// One event to report, as the engine's or the proxy's events map to the device's activity.
public struct ActivityReport: Sendable, Equatable {
    /// What happened.
    public var kind: DeviceEventKind
    /// The asset.
    public var asset: String?
    /// A typed reason.
    public var reason: String?
    /// Seconds (played).
    public var seconds: Double?
    /// More.
    public var detail: String?

    /// A report.
    public init(_ kind: DeviceEventKind, asset: String?, reason: String? = nil, seconds: Double? = nil, detail: String? = nil) {
        self.kind = kind
        self.asset = asset
        self.reason = reason
        self.seconds = seconds
        self.detail = detail
    }

    /// Records this report through `agent` (a failure to keep it is not the caller's failure: it is dropped).
    func record(_ agent: Agent) async {
        _ = try? await agent.activity.record(kind, asset: asset, reason: reason, seconds: seconds, detail: detail)
    }
}

/// The download engine's events reported as the device's activity: queued, started,
/// completed, error (with its typed reason), max errors reset, deleted, expired.
public enum EngineActivity {
    /// What `event` is reported as (nothing for progress, warnings and the engine's own state).
    public static func reports(for event: DownloadEvent) -> [ActivityReport] {
        switch event {
        case let .added(id): return [ActivityReport(.downloadQueued, asset: id)]
        case let .started(id): return [ActivityReport(.downloadStarted, asset: id)]
        case let .finished(id): return [ActivityReport(.downloadCompleted, asset: id)]
        case let .error(id, failure, willRetry):
            return [ActivityReport(.downloadError, asset: id, reason: failure.code, detail: willRetry ? "will retry" : "blocked")]
        case let .retriesCleared(id): return [ActivityReport(.maxErrorsReset, asset: id)]
        case let .removed(id): return [ActivityReport(.deleted, asset: id)]
        case let .expiredAssetsReset(ids): return ids.map { ActivityReport(.expired, asset: $0) }
        default: return []
        }
    }

    /// Reports `manager`'s events through `agent` from now until the engine closes; await the task after closing
    /// the engine, and every event it emitted is recorded.
    public static func start(_ manager: DownloadManager, agent: Agent) -> Task<Void, Never> {
        let events = manager.events()
        return Task {
            for await event in events {
                for report in reports(for: event) { await report.record(agent) }
            }
        }
    }
}

/// The playback proxy's sessions reported as the device's activity: play start when a session opens, play stop with
/// the seconds it was open when it closes.
public final class PlaybackActivity: Sendable {
    let agent: Agent
    private let opened = Locked<[String: [Date]]>([:])

    /// Reports through `agent`.
    public init(agent: Agent) {
        self.agent = agent
    }

    /// What `event` is reported as, at `now` (play stop pairs with the asset's oldest open session).
    public func reports(for event: PlaybackEvent, at now: Date = Date()) -> [ActivityReport] {
        switch event {
        case let .opened(asset, _):
            opened.withLock { $0[asset, default: []].append(now) }
            return [ActivityReport(.playStart, asset: asset)]
        case let .closed(asset):
            let start = opened.withLock { table -> Date? in
                guard var starts = table[asset], !starts.isEmpty else { return nil }
                let first = starts.removeFirst()
                table[asset] = starts.isEmpty ? nil : starts
                return first
            }
            return [ActivityReport(.playStop, asset: asset, seconds: start.map { max(0, now.timeIntervalSince($0)) })]
        default:
            return []
        }
    }

    /// Records what `event` is reported as.
    public func observe(_ event: PlaybackEvent) async {
        for report in reports(for: event) { await report.record(agent) }
    }
}
