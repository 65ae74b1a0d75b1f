import Foundation
import HTTPTypes
import Hummingbird
import Logging
import SatchelBytes
import SatchelHTTP
import SatchelLicensing
import SatchelProtection

/// The license endpoints of `satchel serve`: FairPlay (`/fps/…`), W3C Clear Key and HLS AES-128 keys.
/// Errors are thrown as they are; the HTTP kit answers them as problem+json.
struct LicenseRoutes: RouteGroup {
    let service: LicenseService
    let certificate: [UInt8]?
    let metrics: LicenseMetrics
    let logger: Logger
    static let fairPlayNotConfigured = Problem(status: .notFound, type: "fairplay-not-configured",
                                               detail: "FairPlay is not configured on this server (no --fps-certificate)")
    /// The Clear Key answer's expiry (an HTTP date), for players that show it: the license JSON has no place for it.
    static let licenseExpires = HTTPField.Name("Satchel-License-Expires")!
    /// Set when a CKC carries dual expiry: the download's content ID (the app may send Sync SPCs for it).
    static let offlineContentID = HTTPField.Name("Satchel-Offline-Content-ID")!
    /// The app's custom data for a request without a JSON or form body (a raw SPC, an AES-128 key GET), base64.
    static let customDataHeader = HTTPField.Name("X-Satchel-Custom-Data")!
    /// Refusals are logged at most this often (a flood of bad requests must not flood the log).
    let refusalLog = RateLimitedLog(perSecond: 10)

    func register(on router: Router<SatchelRequestContext>) {
        router.get("/fps/certificate") { _, _ in
            guard let certificate else { throw Self.fairPlayNotConfigured }
            return Response.bytes(certificate, contentType: "application/x-x509-ca-cert")
        }
        router.post("/fps/license") { request, _ in
            // Without credentials every FairPlay route says so, before reading the body or the token.
            guard service.ksm != nil else { throw Self.fairPlayNotConfigured }
            return try await counted("fairplay") { try await fairPlay(request) }
        }
        router.post("/clearkey/license") { request, _ in try await counted("clearkey") { try await clearKey(request) } }
        router.get("/keys/{keyId}") { request, context in
            try await counted("aes-128") {
                guard let id = context.parameters.get("keyId"), let keyID = try? KeyID(hex: id) else {
                    throw Problem(status: .badRequest, type: "bad-request", detail: "the key ID must be 32 hex digits")
                }
                let key = try await service.aes128Key(keyID, token: request.bearerToken, customData: try customData(request, body: nil))
                return Response.bytes(key, contentType: "application/octet-stream")
            }
        }
    }

    /// Counts and times a license request; a refusal is counted by its problem type and logged (rate-limited).
    private func counted(_ type: String, _ body: () async throws -> Response) async throws -> Response {
        let clock = ContinuousClock()
        let start = clock.now
        defer { metrics.observe(start.duration(to: clock.now)) }
        do {
            let response = try await body()
            metrics.issued(type)
            return response
        } catch {
            let problem = Problem(any: error)
            metrics.failed(problem.type)
            refusalLog.log { suppressed in
                logger.info("license refused", metadata: ["type": .string(type), "problem": .string(problem.type),
                                                          "suppressed": .stringConvertible(suppressed)])
            }
            throw problem
        }
    }

    /// The one rule for every endpoint: the `Authorization: Bearer` header wins; a `token` in the body
    /// (JSON or form) is used only when the request has no such header.
    private func token(_ request: Request, body: @autoclosure () -> String?) -> String? {
        request.bearerToken ?? body()
    }

    /// The app's custom data: the body's `customData` member or form field, else the
    /// `X-Satchel-Custom-Data` header (base64 of UTF-8 text), as the client sends it.
    private func customData(_ request: Request, body: String?) throws -> String? {
        if let body { return body }
        guard let header = request.headers[Self.customDataHeader] else { return nil }
        guard header.utf8.count <= LicenseService.maximumCustomData * 2, let bytes = Data(base64Encoded: header),
              let text = String(bytes: bytes, encoding: .utf8) else {
            throw LicensingError.badRequest("X-Satchel-Custom-Data must be base64 of UTF-8 text")
        }
        return text
    }

    private func body(_ request: Request) async throws -> [UInt8] {
        do {
            let buffer = try await request.body.collect(upTo: .max)
            return Array(buffer.readableBytesView)
        } catch let problem as Problem {
            throw problem  // the body limit
        } catch {
            throw Problem(status: .badRequest, type: "bad-request", detail: "the request body could not be read (malformed or cut short)")
        }
    }

    /// POST /fps/license: a raw SPC, `{"spc", "assetId"}` (JSON or form), or Apple's `fairplay-streaming-request`.
    private func fairPlay(_ request: Request) async throws -> Response {
        let bytes = try await body(request)
        let contentType = request.headers[.contentType]?.lowercased() ?? ""
        // A raw SPC is recognised by its header whatever the Content-Type says (`curl --data-binary` sends a form type).
        if contentType.hasPrefix("application/x-www-form-urlencoded"), !Self.looksLikeSPC(bytes) {
            let fields = Self.formFields(String(decoding: bytes, as: UTF8.self))
            guard let spc = fields["spc"].flatMap(Self.base64) else { throw LicensingError.badRequest("form field \"spc\" (base64) is required") }
            let license = try await service.fairPlay(spc: spc, assetHint: fields["assetId"], token: token(request, body: fields["token"]),
                                                     customData: try customData(request, body: fields["customData"]))
            return Self.marked(try Response.json(CKCAnswer(license)), license)
        }
        if let first = bytes.first(where: { ![0x20, 0x0a, 0x0d, 0x09].contains($0) }), first == UInt8(ascii: "{") {
            guard let message = try? JSONCoding.decoder().decode(FairPlayLicenseRequest.self, from: Data(bytes)) else {
                throw LicensingError.badRequest("the body is not a JSON object of the documented shape")
            }
            let bodyToken = token(request, body: message.token)
            let custom = try customData(request, body: message.customData)
            if let apple = message.appleRequest { return try await appleRequest(apple, token: bodyToken, customData: custom) }
            guard let spc = message.spc.flatMap(Self.base64) else { throw LicensingError.badRequest("\"spc\" (base64) is required") }
            let license = try await service.fairPlay(spc: spc, assetHint: message.assetId, token: bodyToken, customData: custom)
            return Self.marked(try Response.json(CKCAnswer(license)), license)
        }
        let license = try await service.fairPlay(spc: bytes, token: request.bearerToken, customData: try customData(request, body: nil))
        return Self.marked(Response.bytes(license.ckc, contentType: "application/octet-stream"), license)
    }

    /// `response` with the dual-expiry header when the license carries it.
    static func marked(_ response: Response, _ license: LicenseService.FairPlayLicense) -> Response {
        guard let contentID = license.offlineContentID else { return response }
        var response = response
        response.headers[offlineContentID] = contentID
        return response
    }

    /// Apple's JSON protocol: `{"fairplay-streaming-request": {"version": 1, "streaming-keys": [{"id", "uri", "spc"}]}}`.
    private func appleRequest(_ request: AppleStreamingRequest, token: String?, customData: String?) async throws -> Response {
        guard request.version == 1, let keys = request.streamingKeys, !keys.isEmpty, keys.count <= 32 else {
            throw LicensingError.badRequest("fairplay-streaming-request needs version 1 and 1 to 32 streaming-keys")
        }
        var answers: [AppleStreamingResponse.Key] = []
        for key in keys {
            guard let spc = key.spc.flatMap(Self.base64) else { throw LicensingError.badRequest("each streaming key needs an \"spc\"") }
            let hint = key.uri.flatMap { URL(string: $0)?.host }
            let license = try await service.fairPlay(spc: spc, assetHint: hint, token: token, customData: customData)
            answers.append(.init(id: key.id, uri: key.uri, ckc: Data(license.ckc).base64EncodedString(), offlineContentID: license.offlineContentID))
        }
        return try Response.json(AppleStreamingResponse(response: .init(streamingKeys: answers)))
    }

    /// POST /clearkey/license.
    private func clearKey(_ request: Request) async throws -> Response {
        let bytes = try await body(request)
        let clearKeyRequest = try ClearKey.Request(json: bytes)
        guard let member = try? JSONCoding.decoder().decode(TokenMember.self, from: Data(bytes)) else {
            throw LicensingError.badRequest("\"token\" must be a string")
        }
        let token = token(request, body: member.token)
        let license = try await service.clearKeyLicense(clearKeyRequest, token: token, customData: try customData(request, body: member.customData))
        var response = Response.bytes(license.body, contentType: "application/json")
        response.headers[Self.licenseExpires] = HTTPDate.format(Int64(license.expires.timeIntervalSince1970.rounded(.down)))
        return response
    }

    /// True for bytes that start as an SPC does: version 1 (big-endian) and a reserved word, far longer than a form.
    static func looksLikeSPC(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 176 && bytes.starts(with: [0, 0, 0, 1])
    }

    static func base64(_ text: String) -> [UInt8]? {
        Data(base64Encoded: text, options: .ignoreUnknownCharacters).map(Array.init) ?? Base64URL.decode(text)
    }

    static func formFields(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { continue }
            let decode = { (s: String) in s.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? s }
            fields[decode(parts[0])] = decode(parts[1])
        }
        return fields
    }
}

/// `/health` and `/metrics` (Prometheus text: licenses by type, refusals by problem type, latency, HTTP requests).
struct ServiceRoutes: RouteGroup {
    let metrics: LicenseMetrics

    func register(on router: Router<SatchelRequestContext>) {
        router.get("/health") { _, _ in "ok" }
        router.get("/metrics") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"], body: .init(byteBuffer: ByteBuffer(string: metrics.text())))
        }
    }
}
