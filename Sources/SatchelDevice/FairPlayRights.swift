import Foundation
import SatchelBytes
import SatchelPlayback
import SatchelRights

/// The proxy's rights for assets whose key is a kept FairPlay key, over `inner` for every other asset: the key is
/// the CKC opened by the device's FairPlay client, the rights are the CKC's (a lease or a rental from receipt, an
/// offline key's storage window until its first playback and its playback window from then), evaluated like a
/// Satchel license's on the device's secure clock, and a play's first use is kept with the key.
public struct FairPlayRights: PlaybackRights {
    let inner: any PlaybackRights
    let keyring: FairPlayKeyring
    let client: FairPlayClientFactory
    private let changes = Locked<UInt64>(0)

    /// FairPlay keys from `keyring`, opened by the client `client` makes; every other asset's rights from `inner`.
    public init(inner: any PlaybackRights, keyring: FairPlayKeyring, client: @escaping FairPlayClientFactory = SimulatedFairPlayDevice.factory) {
        self.inner = inner
        self.keyring = keyring
        self.client = client
    }

    /// The key of `record`, opened.
    static func open(_ record: FairPlayKeyring.Record, client: FairPlayClientFactory) async throws -> FairPlayKey {
        guard let certificate = Data(base64Encoded: record.certificate), let ckc = Data(base64Encoded: record.ckc) else {
            throw FairPlayKeyringError(description: "the kept FairPlay key of \(record.assetID) is damaged")
        }
        return try await client(Array(certificate), record.simulatorSecret, try Hex.decode(record.hu, count: 20)).open(ckc: Array(ckc), context: record.context)
    }

    /// The rights `key` grants, as Satchel's model holds them; the storage window stops counting once the key has played.
    static func rights(_ key: FairPlayKey, played: Bool) -> Rights {
        let windows = [key.leaseSeconds, key.rentalSeconds, played ? nil : key.storageSeconds].compactMap { $0 }.filter { $0 > 0 }
        return Rights(validitySeconds: windows.min(), playbackSeconds: key.playbackSeconds, persistent: key.persistent)
    }

    /// The status of `record`'s key at `now` (the wall clock: for a download that is about to start).
    static func status(of record: FairPlayKeyring.Record, client: FairPlayClientFactory, at now: Date) async throws -> RightsStatus {
        let key = try await open(record, client: client)
        return rights(key, played: record.firstPlayback != nil).evaluate(RightsUsage(acquired: record.received, firstUse: record.firstPlayback), at: now).status
    }

    private func kept(_ asset: String) throws(PlaybackError) -> FairPlayKeyring.Record? {
        do { return try keyring.record(asset) } catch { throw .notPlayable(.noRights) }  // a key file that does not open holds no rights
    }

    public func playbackKeys(asset: String) async throws(PlaybackError) -> [PlaybackKey] {
        guard let record = try kept(asset) else { return try await inner.playbackKeys(asset: asset) }
        var grant = try await playbackGrant(asset: asset)
        let status = grant.status(at: readClock()).status
        guard status == .valid else { throw .notPlayable(status) }
        let key: FairPlayKey
        do { key = try await Self.open(record, client: client) } catch { throw .notPlayable(.noRights) }
        guard let content = key.key else {
            throw .unsupportedProtection("the FairPlay key of \(asset) is held by the platform's FairPlay client: play the download in the platform's player (AVPlayer with that client's content key session), or through the proxy in pass-through")
        }
        return [PlaybackKey(keyID: "", key: content, iv: key.iv)]
    }

    public func registerUse(asset: String) async throws(PlaybackError) {
        guard var record = try kept(asset) else { return try await inner.registerUse(asset: asset) }
        guard record.firstPlayback == nil else { return }
        record.firstPlayback = Date()
        do { try keyring.keep(record) } catch { throw .storage("cannot keep the FairPlay key's first playback: \(error)") }
        changes.withLock { $0 &+= 1 }
    }

    public func renewIfDue(asset: String) async throws(PlaybackError) -> Bool {
        guard try kept(asset) == nil else { return false }  // a FairPlay key is not renewed while it plays
        return try await inner.renewIfDue(asset: asset)
    }

    public func playbackGrant(asset: String) async throws(PlaybackError) -> PlaybackGrant {
        var grant = try await inner.playbackGrant(asset: asset)
        guard let record = try kept(asset) else { return grant }
        guard let key = try? await Self.open(record, client: client) else { return .fixed(.noRights) }
        grant.fixed = nil
        grant.rights = Self.rights(key, played: record.firstPlayback != nil)
        grant.usage = RightsUsage(acquired: record.received, firstUse: record.firstPlayback)
        return grant
    }

    public var changeCount: UInt64 { inner.changeCount &+ changes.withLock { $0 } }
    public func readClock() -> ClockReading { inner.readClock() }
    public func clockObserved(_ reading: ClockReading, events: [ClockEvent]) async { await inner.clockObserved(reading, events: events) }
}
