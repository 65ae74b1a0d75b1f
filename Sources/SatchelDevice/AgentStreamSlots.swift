import SatchelAgent
import SatchelBackplane
import SatchelPlayback

/// The device agent's backplane as the proxy's source of stream slots (seed 004 "Secure Lease"): a session takes a
/// slot, its lease is renewed while it plays, and it is released when it closes.
///
/// A refusal stops playback. A backplane that cannot be asked (no registration, no network, a server without
/// stream slots) does not: a downloaded asset plays offline, and a slot is asked for again at each renewal.
public struct AgentStreamSlots: StreamSlots {
    let agent: Agent

    /// Slots from `agent`'s backplane.
    public init(agent: Agent) {
        self.agent = agent
    }

    public func acquire(asset: String) async throws(PlaybackError) -> StreamLease? {
        let answer: StreamSlotAnswer
        do { answer = try await agent.backplane.acquireSlot(asset: asset) } catch {
            if case let .server(type, _, detail) = error, type == SlotRefusal.deviceKilled.rawValue {
                throw .streamRefused(code: type, reason: detail)
            }
            return nil  // not registered, unreachable, or a server without stream slots
        }
        guard answer.granted, let slot = answer.slot else {
            let reason = answer.reason ?? .streamLimit
            throw .streamRefused(code: reason.rawValue, reason: reason.text)
        }
        return StreamLease(slotID: slot.slotID, seconds: answer.leaseSeconds)
    }

    public func renew(_ lease: StreamLease?, asset: String) async throws(PlaybackError) -> StreamLease? {
        guard let lease else { return try await acquire(asset: asset) }
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
