import Foundation
import Hummingbird
import Logging
import SatchelBytes
import SatchelFairPlay
import SatchelHTTP
import SatchelLicensing
import SatchelProtection

/// The HTTP endpoints of `satchel serve`.
struct LicenseRoutes: Sendable {
    let service: LicenseService
    let certificate: [UInt8]?
    let metrics: LicenseMetrics
    let logger: Logger
    static let maximumBody = 1 << 20
    static let fairPlayNotConfigured = Problem(status: .notFound, type: "fairplay-not-configured",
                                               detail: "FairPlay is not configured on this server (no --fps-certificate)")
    /// Refusals are logged at most this often (a flood of bad requests must not flood the log).
    let refusalLog = RateLimitedLog(perSecond: 10)

    func register(on router: Router<BasicRequestContext>) {
        router.get("/health") { _, _ in "ok" }
        router.get("/metrics") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"], body: .init(byteBuffer: ByteBuffer(string: metrics.text())))
        }
        router.get("/fps/certificate") { _, _ in
            guard let certificate else { return Self.fairPlayNotConfigured.response }
            return Response(status: .ok, headers: [.contentType: "application/x-x509-ca-cert"], body: .init(byteBuffer: ByteBuffer(bytes: certificate)))
        }
        router.post("/fps/license") { request, _ in
            // Without credentials every FairPlay route says so, before reading the body or the token.
            guard service.ksm != nil else { return Self.fairPlayNotConfigured.response }
            return await handle("fairplay") { try await fairPlay(request) }
        }
        router.post("/clearkey/license") { request, _ in await handle("clearkey") { try await clearKey(request) } }
        router.get("/keys/:keyId") { request, context in
            await handle("aes-128") {
                guard let id = context.parameters.get("keyId"), let keyID = try? KeyID(hex: id) else {
                    throw Problem(status: .badRequest, type: "bad-request", detail: "the key ID must be 32 hex digits")
                }
                let key = try await service.aes128Key(keyID, token: bearer(request))
                return Response(status: .ok, headers: [.contentType: "application/octet-stream", .cacheControl: "no-store"],
                                body: .init(byteBuffer: ByteBuffer(bytes: key)))
            }
        }
    }

    /// Runs a handler, counting, timing and turning failures into problem responses.
    private func handle(_ type: String, _ body: () async throws -> Response) async -> Response {
        let clock = ContinuousClock()
        let start = clock.now
        defer { metrics.observe(start.duration(to: clock.now)) }
        do {
            let response = try await body()
            metrics.issued(type)
            return response
        } catch {
            let problem = Problem(error)
            metrics.failed(problem.type)
            refusalLog.log { suppressed in
                logger.info("license refused", metadata: ["type": .string(type), "problem": .string(problem.type),
                                                          "suppressed": .stringConvertible(suppressed)])
            }
            return problem.response
        }
    }

    private func bearer(_ request: Request) -> String? {
        guard let value = request.headers[.authorization], value.utf8.count > 7,
              String(decoding: value.utf8.prefix(7), as: UTF8.self).lowercased() == "bearer " else { return nil }
        let token = value.utf8.dropFirst(7).drop { $0 == UInt8(ascii: " ") }
        return String(decoding: token.reversed().drop { $0 == UInt8(ascii: " ") }.reversed(), as: UTF8.self)
    }

    /// The one rule for every endpoint: the `Authorization: Bearer` header wins; a `token` in the body
    /// (JSON or form) is used only when the request has no such header.
    private func token(_ request: Request, body: @autoclosure () -> String?) -> String? {
        bearer(request) ?? body()
    }

    private func body(_ request: Request) async throws -> [UInt8] {
        do {
            let buffer = try await request.body.collect(upTo: Self.maximumBody)
            return Array(buffer.readableBytesView)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw Problem(status: .contentTooLarge, type: "too-large", detail: "request bodies are limited to 1 MiB")
        } catch {
            throw Problem(status: .badRequest, type: "bad-request", detail: "the request body could not be read (malformed or cut short)")
        }
    }

    /// POST /fps/license: a raw SPC, `{"spc", "assetId"}` (JSON or form), or Apple's `fairplay-streaming-request`.
    private func fairPlay(_ request: Request) async throws -> Response {
        let bytes = try await body(request)
        let contentType = request.headers[.contentType]?.lowercased() ?? ""
        let token = bearer(request)
        // A raw SPC is recognised by its header whatever the Content-Type says (`curl --data-binary` sends a form type).
        if contentType.hasPrefix("application/x-www-form-urlencoded"), !Self.looksLikeSPC(bytes) {
            let fields = Self.formFields(String(decoding: bytes, as: UTF8.self))
            guard let spc = fields["spc"].flatMap(Self.base64) else { throw LicensingError.badRequest("form field \"spc\" (base64) is required") }
            let license = try await service.fairPlay(spc: spc, assetHint: fields["assetId"], token: self.token(request, body: fields["token"]))
            return json(["ckc": Data(license.ckc).base64EncodedString()])
        }
        if let first = bytes.first(where: { ![0x20, 0x0a, 0x0d, 0x09].contains($0) }), first == UInt8(ascii: "{") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else {
                throw LicensingError.badRequest("the body is not a JSON object")
            }
            let bodyToken = self.token(request, body: object["token"] as? String)
            if let apple = object["fairplay-streaming-request"] as? [String: Any] {
                return try await appleRequest(apple, token: bodyToken)
            }
            guard let spc = (object["spc"] as? String).flatMap(Self.base64) else { throw LicensingError.badRequest("\"spc\" (base64) is required") }
            let license = try await service.fairPlay(spc: spc, assetHint: object["assetId"] as? String, token: bodyToken)
            return json(["ckc": Data(license.ckc).base64EncodedString()])
        }
        let license = try await service.fairPlay(spc: bytes, token: token)
        return Response(status: .ok, headers: [.contentType: "application/octet-stream"], body: .init(byteBuffer: ByteBuffer(bytes: license.ckc)))
    }

    /// Apple's JSON protocol: `{"fairplay-streaming-request": {"version": 1, "streaming-keys": [{"id", "uri", "spc"}]}}`.
    private func appleRequest(_ request: [String: Any], token: String?) async throws -> Response {
        guard (request["version"] as? Int) == 1, let keys = request["streaming-keys"] as? [[String: Any]], !keys.isEmpty, keys.count <= 32 else {
            throw LicensingError.badRequest("fairplay-streaming-request needs version 1 and 1 to 32 streaming-keys")
        }
        var answers: [[String: Any]] = []
        for key in keys {
            guard let spc = (key["spc"] as? String).flatMap(Self.base64) else { throw LicensingError.badRequest("each streaming key needs an \"spc\"") }
            let hint = (key["uri"] as? String).flatMap { URL(string: $0)?.host }
            let license = try await service.fairPlay(spc: spc, assetHint: hint, token: token)
            var answer: [String: Any] = ["ckc": Data(license.ckc).base64EncodedString()]
            if let id = key["id"] { answer["id"] = id }
            if let uri = key["uri"] { answer["uri"] = uri }
            answers.append(answer)
        }
        return json(["fairplay-streaming-response": ["version": 1, "streaming-keys": answers]])
    }

    /// POST /clearkey/license.
    private func clearKey(_ request: Request) async throws -> Response {
        let bytes = try await body(request)
        let clearKeyRequest = try ClearKey.Request(json: bytes)
        let token = self.token(request, body: (try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])?["token"] as? String)
        let license = try await service.clearKey(clearKeyRequest, token: token)
        return Response(status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
                        body: .init(byteBuffer: ByteBuffer(bytes: license)))
    }

    private func json(_ object: [String: Any]) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return Response(status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
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
