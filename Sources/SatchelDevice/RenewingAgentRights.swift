import Foundation
import SatchelAgent
import SatchelPlayback
import SatchelRights

/// The device agent as the proxy's rights source, renewing a license that comes due while a session plays it (seed
/// 001 "License renewal"): with the entitlement token `token` gives for the asset (the one it was acquired with).
/// A renewal the license server refuses ends the session; a server out of reach is asked again later.
public struct RenewingAgentRights: PlaybackRights {
    /// The agent.
    public let agent: Agent
    let token: @Sendable (String) async -> String?

    /// `agent`, renewing with the token `token` answers for an asset (nil: no renewal).
    public init(agent: Agent, token: @escaping @Sendable (String) async -> String?) {
        self.agent = agent
        self.token = token
    }

    public func playbackKeys(asset: String) async throws(PlaybackError) -> [PlaybackKey] { try await agent.playbackKeys(asset: asset) }
    public func registerUse(asset: String) async throws(PlaybackError) { try await agent.registerUse(asset: asset) }
    public func playbackGrant(asset: String) async throws(PlaybackError) -> PlaybackGrant { try await agent.playbackGrant(asset: asset) }
    public var changeCount: UInt64 { agent.changeCount }
    public func readClock() -> ClockReading { agent.readClock() }
    public func clockObserved(_ reading: ClockReading, events: [ClockEvent]) async { await agent.clockObserved(reading, events: events) }

    public func renewIfDue(asset: String) async throws(PlaybackError) -> Bool {
        guard let current = (try? await agent.licenses())?.filter({ $0.license.assetID == asset }).max(by: { $0.license.acquired < $1.license.acquired })?.license,
              current.rights.renewalDue(current.usage, at: Date()), let token = await token(asset) else { return false }
        do {
            _ = try await agent.renew(asset: asset, token: token)
            return true
        } catch where error.isRetryable {
            return false
        } catch {
            throw .notPlayable(.expired)
        }
    }
}
