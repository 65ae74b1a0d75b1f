import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SatchelBytes
import SatchelRights

/// The agent's HTTP calls to the license server: JSON in and out, the entitlement token as a bearer token,
/// an RFC 9457 problem answer turned into ``AgentError/server(type:status:detail:)``.
struct LicenseServerClient: Sendable {
    let base: URL
    /// The whole request's deadline. AsyncHTTPClient keeps retrying a refused connection until then, so calls
    /// that may meet a server that is down (releases, time) use a short one.
    let timeout: TimeAmount
    /// Answers larger than this are refused.
    static let maximumAnswer = 1 << 20

    /// The HTTP client the calls go through.
    let http: HTTPClient

    init(server: String, timeout: TimeAmount = .seconds(30), http: HTTPClient = .shared) throws(AgentError) {
        self.timeout = timeout
        self.http = http
        guard let url = URL(string: server), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme), url.host != nil else {
            throw .badRequest("the server must be an http or https URL (got \(server.prefix(80)))")
        }
        base = url
    }

    /// `path` resolved against the server (a path, or a relative reference such as a license's renewal URL).
    func url(_ path: String) -> String {
        guard let resolved = URL(string: path, relativeTo: base)?.absoluteURL, resolved.host == base.host, resolved.port == base.port else {
            return base.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/")) + path
        }
        return resolved.absoluteString
    }

    func get(_ path: String) async throws(AgentError) -> Data {
        try await send(HTTPClientRequest(url: url(path)))
    }

    func post(_ path: String, json: some Encodable, token: String?) async throws(AgentError) -> Data {
        try await postAnswer(path, json: json, token: token).body
    }

    func postAnswer(_ path: String, json: some Encodable, token: String?) async throws(AgentError) -> Answer {
        var request = HTTPClientRequest(url: url(path))
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        guard let body = try? JSONCoding.encoder().encode(json) else { throw .badRequest("the request cannot be encoded") }
        request.body = .bytes(ByteBuffer(bytes: body))
        return try await exchange(request)
    }

    /// A successful answer's body and its ``SignedAnswer`` signature, when it carries one.
    struct Answer: Sendable {
        var body: Data
        var signature: String?
    }

    func send(_ request: HTTPClientRequest) async throws(AgentError) -> Data {
        try await exchange(request).body
    }

    func exchange(_ request: HTTPClientRequest) async throws(AgentError) -> Answer {
        let response: HTTPClientResponse
        let body: ByteBuffer
        do {
            response = try await http.execute(request, timeout: timeout)
            body = try await response.body.collect(upTo: Self.maximumAnswer)
        } catch {
            throw .network("\(base.host ?? "the server"): \(Self.reason(error))")
        }
        let data = Data(body.readableBytesView)
        guard (200..<300).contains(response.status.code) else {
            let problem = try? JSONCoding.decoder().decode(ProblemBody.self, from: data)
            throw .server(type: problem?.type.map(Self.slug) ?? "http-\(response.status.code)", status: Int(response.status.code),
                          detail: String((problem?.detail ?? response.status.reasonPhrase).prefix(300)))
        }
        return Answer(body: data, signature: response.headers.first(name: SignedAnswer.header))
    }

    /// The last path component of a problem type URI (`https://satchel.dev/problems/not-entitled` → `not-entitled`).
    static func slug(_ type: String) -> String {
        String(type.split(separator: "/").last ?? Substring(type))
    }

    static func reason(_ error: any Error) -> String {
        let text = String(describing: error)
        if text.contains("connectTimeout") || text.contains("connectionRefused") || text.contains("Connection refused") { return "connection refused or timed out" }
        if text.contains("CERTIFICATE_VERIFY_FAILED") || text.contains("certificate verify failed") {
            return "its TLS certificate is not trusted (a private authority or a self-signed server: give its certificate with --trust-certificate)"
        }
        if text.contains("handshakeFailed") || text.contains("BoringSSLError") || text.contains("NIOSSL") { return "the TLS handshake failed" }
        return String(text.prefix(160))
    }

    struct ProblemBody: Decodable {
        var type: String?
        var detail: String?
    }
}
