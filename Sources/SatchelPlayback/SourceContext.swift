import Logging
import SatchelRights

/// What every source of a session needs from the proxy: its configuration, the origin, and where events go.
struct SourceContext: Sendable {
    let configuration: PlaybackProxy.Configuration
    let origin: OriginFetcher
    let events: EventSink
}

/// The proxy's events, in order, each no more often than a player can use it.
final class EventSink: Sendable {
    private let continuation: AsyncStream<PlaybackEvent>.Continuation

    init(_ continuation: AsyncStream<PlaybackEvent>.Continuation) {
        self.continuation = continuation
    }

    /// Reports `event`.
    func report(_ event: PlaybackEvent) {
        continuation.yield(event)
    }

    /// The session's rights ended (`untrustedTime` when the clock went back).
    func rightsEnded(_ session: PlaybackSession, status: RightsStatus) {
        report(status == .untrustedTime ? .untrustedTime(asset: session.assetID) : .rightsExpired(asset: session.assetID, status: status))
    }

    /// Invalid content, once, then again only after a file of the session has played well.
    func invalidContent(_ session: PlaybackSession, path: String, reason: String) {
        if session.markInvalid() { report(.invalidContent(asset: session.assetID, path: path, reason: reason)) }
    }

    /// No more events.
    func finish() {
        continuation.finish()
    }
}
