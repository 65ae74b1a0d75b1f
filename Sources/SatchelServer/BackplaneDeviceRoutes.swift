import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SatchelBackplane
import SatchelBytes
import SatchelHTTP
import SatchelLicensing
import SatchelRights
import ServiceLifecycle

/// The backplane's device endpoints (over HTTP+JSON and server-sent events): every
/// request signed by the device key with its server certificate, as device licenses are — in the body's `request`
/// for a POST, in the `Satchel-Device-Request` header for a GET — and, when a bearer token comes with it, that
/// token's user must be the device's.
///
/// - `GET /backplane/sync?after=N`: the commands after the N-th, the toggle, the settings and the server's time.
/// - `POST /backplane/commands/{id}/ack`: a command applied.
/// - `POST /backplane/permissions`: may this device download the asset its request names?
/// - `POST /backplane/permissions/release`: the device deleted the asset its request names (its grant is given back).
/// - `POST /backplane/slots`: a concurrent-stream slot to play the asset its request names (refused over the
///   account's stream limit); `POST /backplane/slots/{id}/renew` renews its lease (410 once it ended);
///   `POST /backplane/slots/{id}/release` frees it.
/// - `POST /backplane/events`: a batch of the device's events (at most 500; one sent again is kept once).
/// - `GET /backplane/stream`: server-sent events — `command` (id: its sequence), `settings` — from the cursor
///   (`Last-Event-ID`, else `after`), a comment every heartbeat while nothing happens.
struct BackplaneDeviceRoutes: RouteGroup {
    let backplane: BackplaneService
    /// The header a GET carries its signed request in.
    static let requestHeader = HTTPField.Name("Satchel-Device-Request")!
    static let lastEventID = HTTPField.Name("Last-Event-ID")!
    /// The largest batch of events taken (500 events of the largest size fit).
    static let maximumEventBody = 1 << 20

    func register(on router: Router<SatchelRequestContext>) {
        router.get("/backplane/sync") { request, _ in
            let (claims, record) = try await signedGet(request)
            return try await backplane.signed(try await backplane.sync(record, after: try Self.cursor(request)), answering: claims)
        }
        router.post("/backplane/commands/{commandId}/ack") { request, context in
            let body = try await DeviceLicenseRoutes.decode(DeviceRequestEnvelope.self, request)
            let (_, device) = try await backplane.device(signed: body.request, for: request)
            let id = try context.parameters.require("commandId")
            try await backplane.store.acknowledge(device: device.deviceID, command: id)
            return Response(status: .noContent)
        }
        router.post("/backplane/download-enabled") { request, _ in
            let body = try await DeviceLicenseRoutes.decode(DeviceRequestEnvelope.self, request)
            let (claims, device) = try await backplane.device(signed: body.request, for: request)
            guard let wanted = claims.downloadEnabled else { throw BackplaneError.badRequest("downloadEnabled (true or false) is required") }
            let saved = try await backplane.setDownloadEnabled(.device(device.deviceID), wanted)
            return try await backplane.signed(DownloadToggleAnswer(deviceID: saved.deviceID, downloadEnabled: saved.downloadEnabled), answering: claims)
        }
        router.post("/backplane/permissions") { request, _ in
            let body = try await DeviceLicenseRoutes.decode(DeviceRequestEnvelope.self, request)
            let (claims, device) = try await backplane.device(signed: body.request, for: request)
            return try await backplane.signed(try await backplane.permission(device, asset: claims.assetID ?? ""), answering: claims)
        }
        router.post("/backplane/permissions/release") { request, _ in
            let body = try await DeviceLicenseRoutes.decode(DeviceRequestEnvelope.self, request)
            let (claims, device) = try await backplane.device(signed: body.request, for: request)
            guard let asset = claims.assetID, !asset.isEmpty, asset.utf8.count <= 200 else { throw BackplaneError.badRequest("assetID is 1 to 200 bytes") }
            try await backplane.store.release(device: device.deviceID, asset: asset)
            return Response(status: .noContent)
        }
        router.post("/backplane/slots") { request, _ in
            let body = try await DeviceLicenseRoutes.decode(DeviceRequestEnvelope.self, request)
            let (claims, device) = try await backplane.device(signed: body.request, for: request)
            return try await backplane.signed(try await backplane.slots.acquire(device: device.deviceID, asset: claims.assetID ?? "", at: backplane.now),
                                              answering: claims)
        }
        router.post("/backplane/slots/{slotId}/renew") { request, context in
            let body = try await DeviceLicenseRoutes.decode(DeviceRequestEnvelope.self, request)
            let (claims, device) = try await backplane.device(signed: body.request, for: request)
            let slot = try context.parameters.require("slotId")
            return try await backplane.signed(try await backplane.slots.renew(device: device.deviceID, slot: slot, at: backplane.now), answering: claims)
        }
        router.post("/backplane/slots/{slotId}/release") { request, context in
            let body = try await DeviceLicenseRoutes.decode(DeviceRequestEnvelope.self, request)
            let (_, device) = try await backplane.device(signed: body.request, for: request)
            try await backplane.slots.release(device: device.deviceID, slot: try context.parameters.require("slotId"))
            return Response(status: .noContent)
        }
        router.post("/backplane/events") { request, _ in
            let (_, device, events) = try await Self.signedBody([DeviceEvent].self, request, backplane: backplane, limit: Self.maximumEventBody)
            let bytes = events.reduce(0) { $0 + $1.storedSize }, now = backplane.now
            if let wait = backplane.eventQuota.withLock({ $0.take(device: device.deviceID, events: events.count, bytes: bytes, at: now) }) {
                let error = BackplaneError.tooManyEvents(retryAfter: wait)
                throw Problem(status: .tooManyRequests, type: error.problemType, detail: error.problemDetail, headers: [.retryAfter: String(wait)])
            }
            let recorded = try await backplane.events.record(events, device: device.deviceID, user: device.user, received: backplane.now)
            return try Response.json(EventBatchAnswer(received: events.count, recorded: recorded))
        }
        router.get("/backplane/stream") { request, context in
            let (_, record) = try await signedGet(request)
            let after = try Self.cursor(request)
            _ = try await backplane.sync(record, after: after)  // a killed device that has taken its kill is refused here
            // Streams have a budget of their own, never the connections requests need (a device's newer stream ends its
            // older one: one a device at a time).
            guard backplane.connections?.beginStream(on: context.channel) ?? true else {
                throw Problem(status: .serviceUnavailable, type: "too-many-streams",
                              detail: "the server has as many event streams open as it serves; sync instead, or try again shortly",
                              headers: [.retryAfter: "30"])
            }
            let stream = BackplaneEventStream(backplane: backplane, device: record.deviceID, after: after)
            return Response(status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-store"],
                            body: ResponseBody { writer in try await stream.run(&writer) })
        }
    }

    /// The signed request of a POST with a signed body (``DeviceBodyEnvelope``, at most `limit` bytes), its device and its body: the
    /// signed request must name the body's digest.
    static func signedBody<Body: Decodable>(_ type: Body.Type, _ request: Request, backplane: BackplaneService,
                                            limit: Int = DeviceLicenseRoutes.maximumBody) async throws -> (DeviceRequestClaims, BackplaneDevice, Body) {
        let buffer: ByteBuffer
        do { buffer = try await request.body.collect(upTo: limit) } catch { throw BackplaneError.badRequest("the body is at most \(limit) bytes") }
        guard let envelope = try? JSONCoding.decoder().decode(DeviceBodyEnvelope.self, from: Data(buffer.readableBytesView)) else {
            throw BackplaneError.badRequest("the body is {\"request\", \"body\"}: a signed request and the JSON it signs, as text")
        }
        let (claims, device) = try await backplane.device(signed: envelope.request, for: request)
        guard claims.bodyDigest == DeviceRequestClaims.digest(of: envelope.body) else {
            throw BackplaneError.badRequest("the body is not the one the request signed (bodyDigest)")
        }
        guard let body = try? JSONCoding.decoder().decode(type, from: Data(envelope.body.utf8)) else {
            throw BackplaneError.badRequest("body is JSON of the documented shape")
        }
        return (claims, device, body)
    }

    /// The device a GET's signed request comes from, and the request.
    private func signedGet(_ request: Request) async throws -> (DeviceRequestClaims, DeviceRecord) {
        guard let signed = request.headers[Self.requestHeader], signed.utf8.count <= DeviceLicenseRoutes.maximumBody else {
            throw BackplaneError.badRequest("a device's GET carries its signed request in the Satchel-Device-Request header")
        }
        try SignedRoute.check(signed, for: request)
        return try await backplane.licensing.authenticate(signed, token: request.bearerToken)
    }

    /// The sequence of the last command the device has: `Last-Event-ID`, else `?after=`, else 0.
    static func cursor(_ request: Request) throws(BackplaneError) -> Int64 {
        guard let text = request.headers[lastEventID] ?? request.uri.queryParameters.get("after") else { return 0 }
        guard let value = Int64(text), value >= 0 else { throw .badRequest("the cursor (after, Last-Event-ID) is a command's sequence: 0 or more") }
        return value
    }
}
