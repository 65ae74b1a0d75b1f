import Crypto
import Foundation
import Logging
import SatchelBackplane
import SatchelBytes
import SatchelRights

/// What the agent reports as it works (the secure clock's changes of trust, and releases).
public enum AgentEvent: Sendable, Equatable {
    /// The device's clock went back: date-based rights are untrusted until the server confirms the time.
    case untrustedTime
    /// The server's time confirmed the device's clock again.
    case trustRestored
    /// A release owed to the server was delivered.
    case releaseDelivered(licenseID: String)
    /// The server refused a release for good (it no longer knows the license); it is no longer owed.
    case releaseRefused(licenseID: String, problem: String)
    /// The server holds this license released (or does not know it): it was removed from the device.
    case licenseRevoked(licenseID: String, asset: String)
    /// A notice of the backplane's (what an app shows the user): the credentials refused, the device unregistered,
    /// the result of a change the device asked for, its events sent; `detail` says more.
    case notice(BackplaneNotice, detail: String)
}

/// A stored license with what its rights allow now.
public struct LicenseStatus: Sendable, Equatable {
    /// The license.
    public var license: StoredLicense
    /// Its rights now.
    public var evaluation: RightsEvaluation
}

/// The device agent: the device identity, license acquisition into a persistent store,
/// rights status against a secure clock, the keys for playback, renewal and release. One agent per data
/// directory; it talks to the license server of `satchel serve` and never depends on the server modules.
///
/// Rights are evaluated only from the licenses the server signed (verified whenever they are read) and from the
/// sealed device state (the secure clock, first uses, owed releases): editing the store's rows changes nothing,
/// and editing, deleting or copying back its sealed state makes every license refused
/// (``AgentError/storeTampered(_:)``) until ``sync(token:)`` restores what the server vouches for.
public actor Agent {
    /// The most licenses a device keeps (10,000): acquiring one more is refused (``AgentError/licenseLimit(_:)``)
    /// before the server is asked, so every read of the store, which reads its licenses whole to check them against
    /// the sealed state, stays bounded.
    public static let maximumLicenses = 10_000
    /// The data directory (shared with the download engine when both are used).
    public nonisolated let dataDirectory: String
    let store: LicenseStore
    let clockReader: any ClockReader
    let transport: AgentTransport
    let reporter: AgentReporter
    /// The roles, each holding its own state: the device (its identity and the licenses verified against it), the
    /// secure clock (when the server's time may next be asked for), the events' outbox, the signed requests to the
    /// server, and the sync with it.
    let device: AgentDevice
    let clock: AgentClock
    let activityLog: AgentActivity
    let requests: AgentRequests
    let syncing: AgentSync
    /// Events, in order.
    public nonisolated let events: AsyncStream<AgentEvent>

    /// Opens the agent of `dataDirectory` (made on first use, mode 0700: the device key, in `keyVault` or the
    /// platform's, and the store with its anchor: beside the key file, or in the keychain with the keychain's key).
    /// Its calls to the license server trust the system's certificate authorities and `trustedCertificates` (PEM files,
    /// kept in the data directory: later opens trust them too), or those kept there earlier.
    public init(dataDirectory: String, clockReader: any ClockReader = SystemClockReader(), keyVault: (any DeviceKeyVault)? = nil,
                trustedCertificates: [String] = [], logger: Logger = Logger(label: "satchel.agent")) async throws(AgentError) {
        self.dataDirectory = dataDirectory
        let vault = keyVault ?? FileKeyVault.platform(dataDirectory: dataDirectory)
        let identity = try DeviceIdentity.load(dataDirectory: dataDirectory, vault: vault)
        let transport = try AgentTransport.open(dataDirectory: dataDirectory, adding: trustedCertificates)
        let anchorSeal = StateSeal(deviceKey: identity.key, purpose: "store-anchor")
        let anchor: any StoreAnchoring = vault is FileKeyVault ? FileStoreAnchor(dataDirectory: dataDirectory, seal: anchorSeal)
            : anchorSeal.platformAnchor(dataDirectory: dataDirectory)
        let store = try await LicenseStore(dataDirectory: dataDirectory, deviceKey: identity.key, anchor: anchor, logger: logger)
        let (events, continuation) = AsyncStream.makeStream(of: AgentEvent.self, bufferingPolicy: .bufferingNewest(256))
        let reporter = AgentReporter(continuation: continuation, logger: logger)
        let device = AgentDevice(identity: identity, dataDirectory: dataDirectory)
        let serverKeys = AgentServerKeys(device: device, transport: transport, logger: logger)
        let clock = AgentClock(store: store, reader: clockReader, device: device, transport: transport, serverKeys: serverKeys, reporter: reporter)
        let activity = AgentActivity(dataDirectory: dataDirectory, store: store, reader: clockReader, reporter: reporter)
        let requests = AgentRequests(store: store, device: device, clock: clock, reader: clockReader, transport: transport, serverKeys: serverKeys,
                                     activity: activity, reporter: reporter)
        (self.store, self.clockReader, self.transport, self.reporter, self.events) = (store, clockReader, transport, reporter, events)
        (self.device, self.clock, activityLog, self.requests) = (device, clock, activity, requests)
        syncing = AgentSync(store: store, device: device, clock: clock, requests: requests, reader: clockReader, serverKeys: serverKeys,
                            activity: activity, reporter: reporter)
    }

    /// Closes the store and ends the event stream.
    public func close() async {
        reporter.continuation.finish()
        await activityLog.close()
        await store.close()
    }

    /// The device ID, once registered.
    public var deviceID: String? { device.registration?.deviceID }

    /// The license server the device registered with.
    public var server: String? { device.registration?.server }

    /// Registers the device key with the license server for the token's user; answers the device ID (the same
    /// one again when this device registers again).
    public func register(server: String, token: String, name: String? = nil, externalID: String? = nil) async throws(AgentError) -> String {
        try await AgentRegistration.register(self, server: server, token: token, name: name, externalID: externalID)
    }

    /// The rights status of an asset now (`noRights` when no license is stored).
    public func rights(asset: String) async throws(AgentError) -> RightsEvaluation {
        let snapshot = try await trustedSnapshot()
        let now = try await clock.trustedNow(snapshot)
        guard let license = device.newest(asset, in: snapshot) else { return .none }
        return license.rights.evaluate(license.usage, at: now)
    }

    /// Whether `asset` may play without asking the backplane for a stream slot: its license says so (a persistent,
    /// offline license, valid now). Anything else needs a slot.
    public func allowsOfflinePlay(asset: String) async -> Bool {
        guard let snapshot = try? await store.snapshot(), let now = try? await clock.trustedNow(snapshot),
              let license = device.newest(asset, in: snapshot) else { return false }
        return license.rights.persistent && license.rights.evaluate(license.usage, at: now).status == .valid
    }

    /// Every stored license with its status now.
    public func licenses() async throws(AgentError) -> [LicenseStatus] {
        let snapshot = try await trustedSnapshot()
        let now = try await clock.trustedNow(snapshot)
        return device.installed(snapshot).map { LicenseStatus(license: $0, evaluation: $0.rights.evaluate($0.usage, at: now)) }
    }

    /// Releases not yet delivered to the server.
    public func owedReleases() async throws(AgentError) -> [OwedRelease] {
        try await trustedSnapshot().state.owed
    }

    /// Consumes the rights as a player start does: only when the status is `valid`, starts the playback
    /// window on first use, and answers the content keys.
    public func use(asset: String) async throws(AgentError) -> [PlaybackKey] {
        let (license, now) = try await playable(asset)
        let keys = try device.keys(of: license)
        if license.firstUse == nil, license.rights.playbackSeconds != nil, let now {
            let id = license.licenseID
            try await store.change { (state, _) throws(AgentError) -> (Void, [LicenseStore.RowChange]) in
                if state.licenses[id]?.firstUse == nil { state.licenses[id]?.firstUse = now }
                return ((), [])
            }
        }
        return keys
    }

    /// The keys of a valid license without registering a use (a player that already started).
    public func keys(asset: String) async throws(AgentError) -> [PlaybackKey] {
        try device.keys(of: try await playable(asset).license)
    }

    /// The asset's license when its rights allow playback now, with the trusted time; else `notPlayable`.
    private func playable(_ asset: String) async throws(AgentError) -> (license: StoredLicense, now: Date?) {
        let snapshot = try await trustedSnapshot()
        let now = try await clock.trustedNow(snapshot)
        guard let license = device.newest(asset, in: snapshot) else { throw .notPlayable(.noRights) }
        let status = license.rights.evaluate(license.usage, at: now).status
        guard status == .valid else { throw .notPlayable(status) }
        return (license, now)
    }

    /// The asset an entitlement token names (its `asset` claim), read without checking its signature (the
    /// license server checks it): how `satchel play URL --token` knows which license to acquire.
    public static func assetID(inToken token: String) -> String? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(String(parts[1])),
              let claims = try? JSONCoding.decoder().decode([String: JSONValue].self, from: Data(payload)) else { return nil }
        return claims["asset"]?.string
    }

    // MARK: The store, as the signed licenses say

    /// The license store's snapshot, unless the registration its licenses are verified against was changed outside
    /// Satchel (then nothing is played or reported valid: ``AgentError/registrationTampered(_:)``).
    func trustedSnapshot() async throws(AgentError) -> LicenseStore.Snapshot {
        if let tampered = device.tampered { throw .registrationTampered(tampered) }
        return try await store.snapshot()
    }

    static func decode<T: Decodable>(_ type: T.Type, _ data: Data, what: String) throws(AgentError) -> T {
        do { return try JSONCoding.decoder().decode(type, from: data) } catch { throw .invalidAnswer("\(what) is not JSON of the documented shape") }
    }
}
