/// Where the proxy takes a concurrent-stream slot for each session it opens (the FairPlay Streaming Programming Guide,
/// "Secure Lease"; seam: the
/// device's backplane). A session opens only with a slot (or where the source says it plays without one: no
/// backplane to ask); its lease is renewed while it is open and released when it closes.
public protocol StreamSlots: Sendable {
    /// Takes a slot to play `asset`: the lease, or nil to play without one (asked again at the next renewal);
    /// ``PlaybackError/streamRefused(code:reason:)`` when the account plays as many streams at once as it may.
    func acquire(asset: String) async throws(PlaybackError) -> StreamLease?
    /// Renews `lease` (nil: none held yet) for playing `asset`: the lease now held, or nil when the backplane could not
    /// be asked (asked again at the next renewal); ``PlaybackError/streamRefused(code:reason:)`` when the slot was lost
    /// and no other can be taken (the session is cut).
    func renew(_ lease: StreamLease?, asset: String) async throws(PlaybackError) -> StreamLease?
    /// Frees `lease` (the session closed).
    func release(_ lease: StreamLease) async
}

/// A slot held: its identifier and how long its lease lasts unless renewed.
public struct StreamLease: Sendable, Equatable {
    /// The slot's identifier.
    public var slotID: String
    /// The lease's length in seconds.
    public var seconds: UInt32

    /// A lease.
    public init(slotID: String, seconds: UInt32) {
        self.slotID = slotID
        self.seconds = seconds
    }

    /// How long to wait before renewing: a third of the lease (so two renewals may fail before it ends), at least
    /// a second; a minute's third while no slot is held.
    static func renewal(of lease: StreamLease?) -> Duration {
        .milliseconds(max(1_000, Int(lease?.seconds ?? 60) * 1_000 / 3))
    }
}

/// Keeps one session's slot: renews its lease while the session is open, cuts the session when the slot is lost and
/// no other can be taken, and releases the slot when cancelled (the session closed).
struct SessionLeaseKeeper: Sendable {
    let task: Task<Void, Never>

    /// Starts keeping `lease` for `asset`; `cut` is called with the reason when the slot is refused.
    init(lease: StreamLease?, asset: String, slots: any StreamSlots, cut: @escaping @Sendable (String) async -> Void) {
        task = Task {
            var held = lease
            while !Task.isCancelled {
                do { try await Task.sleep(for: StreamLease.renewal(of: held)) } catch { break }
                do throws(PlaybackError) {
                    held = try await slots.renew(held, asset: asset)
                } catch {
                    held = nil
                    await cut(error.description)
                    break
                }
            }
            // The release must not be cancelled with this task: it runs in a task of its own.
            if let held { await Task { await slots.release(held) }.value }
        }
    }

    /// Stops renewing and releases the slot; answers when it is released.
    func end() async {
        task.cancel()
        await task.value
    }
}
