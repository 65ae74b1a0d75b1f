import Foundation
import SatchelBackplane
import SatchelBytes
import Hummingbird
import Logging
import SatchelHTTP
import SatchelLicensing
import SatchelRights

/// The device endpoints of `satchel serve`: `POST /devices` (registration), `POST /licenses`,
/// `POST /licenses/renew`, `POST /licenses/release`, `POST /licenses/status`, `GET /licenses/keys` (JWKS) and `GET /time`.
/// Bodies are JSON; the entitlement token goes in `Authorization: Bearer`.
struct DeviceLicenseRoutes: RouteGroup {
    let licensing: DeviceLicensing
    let metrics: LicenseMetrics
    /// Enrolls each device registered (absent: no backplane).
    let backplane: BackplaneService?
    /// Renewal URLs are relative: the device resolves them against the server it asked.
    static let renewalPath = "/licenses/renew"
    /// A device request is a few kilobytes; more is refused before decoding.
    static let maximumBody = 64 * 1024

    func register(on router: Router<SatchelRequestContext>) {
        router.post("/devices") { request, _ in
            let body = try await Self.decode(RegistrationRequest.self, request)
            let (device, certificate) = try await licensing.register(body.publicKey, token: request.bearerToken, name: body.name,
                                                                     externalID: body.externalID)
            var answer = RegistrationAnswer(deviceID: device.deviceID, certificate: certificate)
            if let backplane {
                if let platform = body.platform, platform.utf8.count > 64 { throw LicensingError.badRequest("platform is at most 64 bytes") }
                let enrolled = try await backplane.enroll(device, platform: body.platform)
                answer.downloadEnabled = enrolled.device.downloadEnabled
                answer.notice = enrolled.notice?.rawValue
            }
            return try Response.json(answer, status: .created)
        }
        router.post("/licenses") { request, _ in
            let body = try await Self.decode(DeviceRequestEnvelope.self, request)
            try SignedRoute.check(body.request, for: request)
            let license = try await licensing.acquire(body.request, token: request.bearerToken, renewalURL: Self.renewalPath)
            metrics.issued("satchel")
            return try Response.json(LicenseAnswer(license: license))
        }
        router.post("/licenses/renew") { request, _ in
            let body = try await Self.decode(DeviceRequestEnvelope.self, request)
            try SignedRoute.check(body.request, for: request)
            let license = try await licensing.renew(body.request, token: request.bearerToken, renewalURL: Self.renewalPath)
            metrics.issued("satchel-renewal")
            return try Response.json(LicenseAnswer(license: license))
        }
        router.post("/licenses/release") { request, _ in
            let body = try await Self.decode(DeviceRequestEnvelope.self, request)
            try SignedRoute.check(body.request, for: request)
            let record = try await licensing.release(body.request)
            return try Response.json(ReleaseAnswer(licenseID: record.licenseID, state: record.state.rawValue))
        }
        router.post("/licenses/status") { request, _ in
            let body = try await Self.decode(DeviceRequestEnvelope.self, request)
            try SignedRoute.check(body.request, for: request)
            return try Response.json(LicenseStatusAnswer(status: try await licensing.status(body.request)))
        }
        router.get("/licenses/keys") { _, _ in try Response.json(await licensing.keySet()) }
        router.get("/licenses/keys/rotations") { _, _ in try Response.json(await licensing.keyRotations()) }
        router.get("/time") { request, _ in
            try Response.json(TimeAnswer(time: try await licensing.signedTime(nonce: request.uri.queryParameters.get("nonce"))))
        }
    }

    static func decode<Body: Decodable>(_ type: Body.Type, _ request: Request) async throws -> Body {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: maximumBody)
        } catch {
            throw LicensingError.badRequest("the body must be JSON of at most \(maximumBody) bytes")
        }
        do {
            return try JSONCoding.decoder().decode(type, from: Data(buffer.readableBytesView))
        } catch {
            throw LicensingError.badRequest("the body is not JSON of the documented shape: \(SignedToken.describe(error))")
        }
    }
}
