import Foundation
import SatchelAgent
import SatchelBackplane
import SatchelPlayback

/// The device agent's backplane as the proxy's source of stream slots (the FairPlay Streaming Programming Guide,
/// "Secure Lease"): a session takes a
/// slot, its lease is renewed while it plays, and it is released when it closes.
///
/// A refusal stops playback, and so does a backplane that cannot be asked (no network, an answer that is not one):
/// limits fail closed. The one exception is stated in the license: an asset whose license is persistent (offline
/// use) plays without a slot, which is asked for again at each renewal. A device not registered has no backplane
/// and plays without one.
public struct AgentStreamSlots: StreamSlots {
    let agent: Agent
    /// The device's kept FairPlay keys: a persistable one allows offline play as a persistent license does.
    let fairPlay: FairPlayKeyring?
    let client: FairPlayClientFactory

    /// Slots from `agent`'s backplane; `fairPlay`: the kept FairPlay keys, opened by the client `client` makes.
    public init(agent: Agent, fairPlay: FairPlayKeyring? = nil, client: @escaping FairPlayClientFactory = SimulatedFairPlayDevice.factory) {
        self.agent = agent
        self.fairPlay = fairPlay
        self.client = client
    }

    /// True when `asset`'s license, or its kept FairPlay key, allows offline play now.
    func allowsOfflinePlay(asset: String) async -> Bool {
        if await agent.allowsOfflinePlay(asset: asset) { return true }
        guard let record = try? fairPlay?.record(asset), let key = try? await FairPlayRights.open(record, client: client), key.persistent else { return false }
        return (try? await FairPlayRights.status(of: record, client: client, at: Date())) == .valid
    }

    public func acquire(asset: String) async throws(PlaybackError) -> StreamLease? {
        let answer: StreamSlotAnswer
        do { answer = try await agent.backplane.acquireSlot(asset: asset) } catch {
            if case let .server(type, _, detail) = error, type == SlotRefusal.deviceKilled.rawValue {
                throw .streamRefused(code: type, reason: detail)
            }
            if case .notRegistered = error { return nil }
            guard await allowsOfflinePlay(asset: asset) else {
                throw .streamRefused(code: Self.unavailable, reason: "the stream-slot service cannot be asked (\(error.description.prefix(200))); "
                                     + "only an asset whose license allows offline play plays without it: try again once connected")
            }
            return nil  // offline, as its license allows: asked again at each renewal
        }
        guard answer.granted, let slot = answer.slot else {
            let reason = answer.reason ?? .streamLimit
            throw .streamRefused(code: reason.rawValue, reason: reason.text)
        }
        return StreamLease(slotID: slot.slotID, seconds: answer.leaseSeconds)
    }

    /// The refusal's code when the stream-slot service cannot be asked.
    public static let unavailable = "stream-slot-unavailable"

    public func renew(_ lease: StreamLease?, asset: String) async throws(PlaybackError) -> StreamLease? {
        guard let lease else {
            // A session started without a slot (offline, as its license allowed) goes on while the backplane stays out
            // of reach; the rights' own end stops it.
            do throws(PlaybackError) { return try await acquire(asset: asset) } catch {
                if case let .streamRefused(code, _) = error, code == Self.unavailable { return nil }
                throw error
            }
        }
        do {
            let answer = try await agent.backplane.renewSlot(lease.slotID)
            return StreamLease(slotID: lease.slotID, seconds: answer.leaseSeconds)
        } catch {
            // The lease ended (the device was offline for longer): a new slot, if the account has one free.
            if case let .server(type, _, _) = error, type == BackplaneError.slotLost("").code { return try await acquire(asset: asset) }
            return lease  // not asked: the backplane may hold it still; asked again at the next renewal
        }
    }

    public func release(_ lease: StreamLease) async {
        try? await agent.backplane.releaseSlot(lease.slotID)
    }
}
