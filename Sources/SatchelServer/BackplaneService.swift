import Foundation
import HTTPTypes
import Hummingbird
import SatchelBackplane
import SatchelBytes
import SatchelHTTP
import SatchelLicensing
import SatchelRights
import SatchelSystem

/// The backplane as `satchel serve` runs it: the store, this node's streams, and the device licensing that signs
/// devices in. Devices are enrolled when they register (`POST /devices`); one registered before the backplane
/// existed is enrolled on its first backplane call.
package struct BackplaneService: Sendable {
    /// Users, devices, limits, grants and commands.
    package let store: any BackplaneStoring
    /// Concurrent-stream slots.
    package let slots: any StreamSlotStoring
    /// The devices' events.
    package let events: any EventStoring
    /// Feeds and their items.
    package let feeds: any FeedStoring
    /// Wakes this node's device streams.
    package let hub: BackplaneWakeHub
    let licensing: DeviceLicensing
    let sessions: AdminSessions?
    /// How often a stream with nothing to send sends a comment, so idle proxies keep it open.
    let heartbeat: Duration
    /// Each device's budget of events on this node.
    let eventQuota: Locked<EventQuota>
    /// The server's connections, when known: a device's event stream takes its place in their budget of streams.
    let connections: ConnectionRegistry?

    /// The backplane over `store`, `slots`, `events` and `feeds`, its devices signed in by `licensing`; `sessions` holds the operator key
    /// the operator API takes as a bearer token (absent: no operator API); each device may send the events `eventQuota` allows;
    /// event streams count in the stream budget of `connections` (the server's, when given).
    package init(store: any BackplaneStoring, slots: any StreamSlotStoring, events: any EventStoring, feeds: any FeedStoring,
                hub: BackplaneWakeHub, licensing: DeviceLicensing, sessions: AdminSessions?,
                heartbeat: Duration = .seconds(15), eventQuota: EventQuota = EventQuota(), connections: ConnectionRegistry? = nil) {
        self.eventQuota = Locked(eventQuota)
        self.connections = connections
        self.store = store
        self.slots = slots
        self.events = events
        self.feeds = feeds
        self.hub = hub
        self.licensing = licensing
        self.sessions = sessions
        self.heartbeat = heartbeat
    }

    var now: Date { licensing.service.clock.now }

    /// `slots` as the license service's ``LeaseSlots``: a FairPlay lease takes a stream slot of the account.
    package static func leaseSlots(_ slots: any StreamSlotStoring) -> any LeaseSlots { BackplaneLeaseSlots(slots: slots) }

    /// Enrolls a device the license service just registered (again); answers the registration with its notice.
    func enroll(_ record: DeviceRecord, platform: String?) async throws(BackplaneError) -> BackplaneRegistration {
        let device = BackplaneDevice(deviceID: record.deviceID, user: record.subject, externalID: record.externalID, name: record.name ?? "",
                                     platform: platform ?? "", downloadEnabled: true, registered: record.registeredAt)
        return try await store.register(device)
    }

    /// The device a signed request comes from (enrolled on its first call if it registered before the backplane).
    func device(signed request: String, for http: Request) async throws -> (claims: DeviceRequestClaims, device: BackplaneDevice) {
        try SignedRoute.check(request, for: http)
        let (claims, record) = try await licensing.authenticate(request, token: http.bearerToken)
        do {
            return (claims, try await store.device(.device(record.deviceID)))
        } catch BackplaneError.unknownDevice {
            return (claims, try await enroll(record, platform: nil).device)
        }
    }

    /// What a device learns at a sync: its commands after `after`, its toggle, the settings, the
    /// server's time. A killed device may still sync (and acknowledge) until it has acknowledged its kill; after that
    /// it is refused. A device registered before the backplane is enrolled first.
    func sync(_ record: DeviceRecord, after: Int64) async throws(BackplaneError) -> BackplaneSyncAnswer {
        do {
            return try await store.syncView(device: record.deviceID, after: after, limit: 500, at: now)
        } catch .unknownDevice {
            _ = try await enroll(record, platform: nil)
            return try await store.syncView(device: record.deviceID, after: after, limit: 500, at: now)
        }
    }

    /// Whether the device may download `asset`: an asset whose keys are here must allow offline licenses; an asset
    /// without keys here (clear, or protected elsewhere) is downloadable.
    func permission(_ device: BackplaneDevice, asset: String) async throws -> BackplanePermissionAnswer {
        guard !asset.isEmpty, asset.utf8.count <= 200 else { throw BackplaneError.badRequest("assetID is 1 to 200 bytes") }
        var downloadable = true
        do {
            downloadable = try await licensing.service.store.key(asset: asset).policy.offline
        } catch LicensingError.unknownAsset {
            downloadable = true
        }
        return BackplanePermissionAnswer(assetID: asset, permission: try await store.permission(device: device.deviceID, asset: asset,
                                                                                               downloadable: downloadable))
    }

    /// Issues `action` to a device and wakes its stream on this node (other nodes: by the store's notification).
    /// A kill also disables the device for licenses.
    func issue(_ action: BackplaneCommand.Action, to reference: DeviceReference) async throws -> BackplaneCommand {
        let command = try await store.issue(action, to: reference, at: now)
        let device = try await store.device(reference)
        if case .kill = action { _ = try await licensing.registry.setDisabled(device.deviceID, true) }
        hub.wake(device: device.deviceID)
        return command
    }

    /// Turns a device's downloading on or off, and wakes its stream.
    func setDownloadEnabled(_ reference: DeviceReference, _ wanted: Bool) async throws(BackplaneError) -> BackplaneDevice {
        let device = try await store.setDownloadEnabled(reference, wanted, at: now)
        hub.wake(device: device.deviceID)
        return device
    }

    /// Puts `settings` over those in force, and wakes every stream.
    func updateSettings(_ settings: BackplaneSettings) async throws(BackplaneError) -> BackplaneSettings {
        let updated = try await store.updateSettings(settings)
        hub.wakeAll()
        return updated
    }

    /// A user: their devices and limits.
    func user(_ user: String) async throws(BackplaneError) -> BackplaneUser {
        let (global, own) = try await store.limits(of: user)
        return BackplaneUser(user: user, limits: global.overridden(by: own), ownLimits: own,
                             devices: try await store.devices(user: user, page: ListingRequest(limit: ListingRequest.maximumLimit)).items)
    }

    /// `value` as JSON, signed for the device request `claims` came in (``SignedAnswer``, in the `Satchel-Signature`
    /// header): the device applies nothing a hop on the way could have changed or replayed.
    func signed(_ value: some Encodable, answering claims: DeviceRequestClaims) async throws -> Response {
        let data = try JSONCoding.encoder().encode(value)
        let signature = try await licensing.signAnswer(data, nonce: claims.nonce)
        return Response(status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store", Self.signatureHeader: signature],
                        body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static let signatureHeader = HTTPField.Name(SignedAnswer.header)!
}
