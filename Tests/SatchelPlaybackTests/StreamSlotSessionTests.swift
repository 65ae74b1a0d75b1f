import Foundation
import SatchelBytes
import SatchelPlayback
import SatchelRights
import Testing

/// The proxy's sessions and stream slots (seed 004 "Secure Lease") over its seam: a session opens only with a slot,
/// renews its lease while open, is cut when the slot is lost and no other is free, and releases it when it closes.
@Suite struct StreamSlotSessionTests {
    /// Slots that grant `free` leases of one second, and record what the proxy did.
    final class Slots: StreamSlots, Sendable {
        let free: Int
        let log = Locked<[String]>([])
        /// Set: renewals are refused from then on (the lease was lost and the account's limit is reached).
        let refuseRenewals = Locked(false)
        init(free: Int) { self.free = free }

        func acquire(asset: String) async throws(PlaybackError) -> StreamLease? {
            let taken = log.withLock { log -> Int? in
                let held = log.filter { $0.hasPrefix("acquire") }.count - log.filter { $0.hasPrefix("release") }.count
                guard held < free else { return nil }
                log.append("acquire \(asset)")
                return log.count
            }
            guard let taken else { throw .streamRefused(code: "stream-limit", reason: "this account plays as many streams at once as it may") }
            return StreamLease(slotID: "slot-\(taken)", seconds: 1)
        }

        func renew(_ lease: StreamLease?, asset: String) async throws(PlaybackError) -> StreamLease? {
            if refuseRenewals.current { throw .streamRefused(code: "stream-limit", reason: "the slot was lost") }
            log.withLock { $0.append("renew \(lease?.slotID ?? "none")") }
            return lease
        }

        func release(_ lease: StreamLease) async { log.withLock { $0.append("release \(lease.slotID)") } }
    }

    /// A proxy over an AES-128 folder, its keys fixed, its sessions taking slots from `slots`.
    static func proxy(_ slots: Slots) throws -> (PlaybackProxy, PlaybackProxyTests.Rights) {
        let key = SecureRandom.bytes(16)
        let (folder, _) = try PlaybackProxyTests.encryptedFolder(key: key, iv: SecureRandom.bytes(16))
        let rights = PlaybackProxyTests.Rights([PlaybackKey(keyID: "00", key: SecretBytes(key))])
        return (try PlaybackProxy(library: PlaybackProxyTests.Folder(path: folder.path), rights: rights, slots: slots), rights)
    }

    @Test("a session takes a slot; the next over the limit does not open (the reason, and no session); closing one releases its slot and frees it; an open session renews its lease")
    func limit() async throws {
        let slots = Slots(free: 1)
        let (proxy, _) = try Self.proxy(slots)
        defer { Task { await proxy.stop() } }
        let first = try await proxy.open(asset: "a")
        await #expect(throws: PlaybackError.streamRefused(code: "stream-limit", reason: "this account plays as many streams at once as it may")) {
            _ = try await proxy.open(asset: "b")
        }
        #expect(await proxy.openSessions == 1)
        for _ in 0..<200 where !slots.log.current.contains("renew slot-1") { try await Task.sleep(for: .milliseconds(100)) }
        #expect(slots.log.current.contains("renew slot-1"), "renewed within its one-second lease: \(slots.log.current)")
        await proxy.close(url: first)
        #expect(slots.log.current.last == "release slot-1")
        _ = try await proxy.open(asset: "b")
        #expect(await proxy.openSessions == 1)
    }

    @Test("a session refused for its rights gives its slot back at once; a stream refused asks the rights nothing (no use of the asset is registered)")
    func refusedOpen() async throws {
        let slots = Slots(free: 1)
        let (proxy, rights) = try Self.proxy(slots)
        defer { Task { await proxy.stop() } }
        rights.status = .expired
        await #expect(throws: PlaybackError.notPlayable(.expired)) { _ = try await proxy.open(asset: "a") }
        #expect(slots.log.current == ["acquire a", "release slot-1"])
        rights.status = .valid
        _ = try await proxy.open(asset: "b")
        let asked = rights.grants.current
        await #expect(throws: PlaybackError.self) { _ = try await proxy.open(asset: "c") }
        #expect(rights.grants.current == asked, "a refused stream does not reach the rights")
    }

    @Test("a session whose slot is lost (renewal refused) is cut: the player is told why, its token stops working, and nothing is released twice")
    func cut() async throws {
        let slots = Slots(free: 2)
        let (proxy, _) = try Self.proxy(slots)
        let events = Task { () -> [PlaybackEvent] in
            var seen: [PlaybackEvent] = []
            for await event in proxy.events { seen.append(event) }
            return seen
        }
        let url = try await proxy.open(asset: "a")
        #expect(try await PlaybackProxyTests.get(url).status == 200)
        slots.refuseRenewals.withLock { $0 = true }
        for _ in 0..<60 where await proxy.openSessions > 0 { try await Task.sleep(for: .milliseconds(100)) }
        #expect(await proxy.openSessions == 0)
        #expect(try await PlaybackProxyTests.get(url).status == 404)
        await proxy.stop()
        let seen = await events.value
        #expect(seen.contains(.willAbort(asset: "a", reason: "no stream slot: the slot was lost")), "\(seen)")
        #expect(!slots.log.current.contains { $0.hasPrefix("release") }, "a lost slot is not released")
    }
}
