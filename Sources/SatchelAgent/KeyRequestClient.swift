import AsyncHTTPClient
import Foundation
import SatchelStreams
import NIOCore
import NIOHTTP1
import SatchelBytes
import SatchelProtection

/// The agent as a client of the license protocols players speak, for players that need them: FairPlay
/// (the SPC → CKC exchange in the three shapes `satchel serve` accepts), W3C Clear Key and HLS AES-128 keys.
/// Every request carries the ``LicenseRequestExtras`` (custom headers, custom data, a license token); every
/// answer is checked before it is handed back. Keys are never logged.
package struct KeyRequestClient: Sendable {
    /// How a FairPlay SPC is sent.
    package enum FairPlayShape: String, Sendable, CaseIterable {
        /// The SPC as the body (`application/octet-stream`); the CKC comes back as the body.
        case raw
        /// `{"spc": base64, "assetId": …}`; the answer is `{"ckc": base64}`.
        case json
        /// Apple's `{"fairplay-streaming-request": {"version": 1, "streaming-keys": [{"id", "uri", "spc"}]}}`.
        case apple
    }

    /// The request's deadline.
    package let timeout: TimeAmount

    /// Creates a client.
    package init(timeout: TimeAmount = .seconds(30)) {
        self.timeout = timeout
    }

    /// The FairPlay Application Certificate at `url` (DER, or PEM converted to DER).
    package func fairPlayCertificate(url: String, extras: LicenseRequestExtras) async throws(AgentError) -> [UInt8] {
        let bytes = Array(try await send(url, method: .GET, body: nil, contentType: nil, extras: extras, customDataInBody: false))
        guard let der = Self.der(bytes), der.count >= 64 else { throw .invalidAnswer("the FairPlay certificate is neither DER nor PEM") }
        return der
    }

    /// Sends an SPC and answers the CKC. `assetID` goes into the JSON shapes (the Apple shape names it as the
    /// key's `skd://` URI).
    package func fairPlay(spc: [UInt8], url: String, assetID: String?, shape: FairPlayShape,
                         extras: LicenseRequestExtras) async throws(AgentError) -> [UInt8] {
        guard !spc.isEmpty, spc.count <= 1 << 20 else { throw .badRequest("the SPC is empty or larger than 1 MB") }
        let encoded = Data(spc).base64EncodedString()
        switch shape {
        case .raw:
            let answer = try await send(url, method: .POST, body: spc, contentType: "application/octet-stream", extras: extras, customDataInBody: false)
            return try Self.ckc(Array(answer))
        case .json:
            let body = FairPlayJSON(spc: encoded, assetId: assetID, customData: extras.customData)
            let answer = try await send(url, method: .POST, body: try Self.encode(body), contentType: "application/json", extras: extras, customDataInBody: true)
            guard let message = try? JSONCoding.decoder().decode(CKCMessage.self, from: answer) else { throw .invalidAnswer("the answer has no \"ckc\" member") }
            return try Self.ckc(Self.base64(message.ckc))
        case .apple:
            let key = AppleRequest.Key(id: 1, uri: assetID.map { "skd://\($0)" }, spc: encoded)
            let body = AppleRequest(request: .init(version: 1, streamingKeys: [key]), customData: extras.customData)
            let answer = try await send(url, method: .POST, body: try Self.encode(body), contentType: "application/json", extras: extras, customDataInBody: true)
            guard let message = try? JSONCoding.decoder().decode(AppleResponse.self, from: answer), let first = message.response.streamingKeys.first else {
                throw .invalidAnswer("the answer is not a fairplay-streaming-response with a streaming key")
            }
            if let error = first.error { throw .server(type: "fairplay-\(error)", status: 200, detail: "the server answered the key with error \(error)") }
            return try Self.ckc(Self.base64(first.ckc ?? ""))
        }
    }

    /// Asks a W3C Clear Key license server for `keyIDs`; answers the keys it granted, each one asked for.
    package func clearKey(keyIDs: [KeyID], url: String, persistent: Bool = false,
                         extras: LicenseRequestExtras) async throws(AgentError) -> [(keyID: KeyID, key: SecretBytes)] {
        guard !keyIDs.isEmpty, keyIDs.count <= 64 else { throw .badRequest("a Clear Key request names 1 to 64 key IDs") }
        let body = ClearKeyJSON(kids: keyIDs.map(\.base64URL), type: persistent ? "persistent-license" : "temporary", customData: extras.customData)
        let answer = try await send(url, method: .POST, body: try Self.encode(body), contentType: "application/json", extras: extras, customDataInBody: true)
        let keys: [(keyID: KeyID, key: SecretBytes)]
        do { keys = try ClearKey.parseResponse(Array(answer)) } catch { throw .invalidAnswer(error.description) }
        let granted = keys.filter { key in keyIDs.contains(key.keyID) }
        guard !granted.isEmpty else { throw .invalidAnswer("the Clear Key license holds none of the key IDs asked for") }
        return granted
    }

    /// Fetches an HLS AES-128 key (the `URI` of an `EXT-X-KEY`): exactly 16 bytes.
    package func aes128Key(url: String, extras: LicenseRequestExtras) async throws(AgentError) -> SecretBytes {
        let answer = try await send(url, method: .GET, body: nil, contentType: nil, extras: extras, customDataInBody: false)
        guard answer.count == 16 else { throw .invalidAnswer("an AES-128 key is 16 bytes (the answer has \(answer.count))") }
        return SecretBytes(Array(answer))
    }

    // MARK: The exchange

    private func send(_ url: String, method: HTTPMethod, body: [UInt8]?, contentType: String?, extras: LicenseRequestExtras,
                      customDataInBody: Bool) async throws(AgentError) -> Data {
        let client = try LicenseServerClient(server: url, timeout: timeout)  // checks the URL: http or https with a host
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let contentType { request.headers.add(name: "Content-Type", value: contentType) }
        for header in extras.httpHeaders(bodyCarriesCustomData: customDataInBody) { request.headers.replaceOrAdd(name: header.name, value: header.value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        return try await client.send(request)
    }

    /// A CKC is never empty, and an answer that is a JSON object is an error message, not a CKC.
    static func ckc(_ bytes: [UInt8]) throws(AgentError) -> [UInt8] {
        guard bytes.count >= 16 else { throw .invalidAnswer("the CKC is empty or too short") }
        guard bytes.first != UInt8(ascii: "{") else { throw .invalidAnswer("the answer is a JSON document, not a CKC") }
        return bytes
    }

    static func base64(_ text: String) throws(AgentError) -> [UInt8] {
        guard let data = Data(base64Encoded: text) else { throw .invalidAnswer("the CKC is not base64") }
        return Array(data)
    }

    /// DER as is; PEM's base64 between its armour lines.
    static func der(_ bytes: [UInt8]) -> [UInt8]? {
        if bytes.first == 0x30 { return bytes }
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.contains("-----BEGIN") else { return nil }
        let body = text.split(whereSeparator: \.isNewline).filter { !$0.hasPrefix("-----") }.joined()
        return Data(base64Encoded: body).map(Array.init)
    }

    static func encode(_ value: some Encodable) throws(AgentError) -> [UInt8] {
        do { return Array(try JSONCoding.encoder().encode(value)) } catch { throw .badRequest("the request cannot be encoded") }
    }

    // MARK: Bodies

    struct FairPlayJSON: Encodable {
        var spc: String
        var assetId: String?
        var customData: String?
    }

    struct CKCMessage: Decodable {
        var ckc: String
    }

    struct ClearKeyJSON: Encodable {
        var kids: [String]
        var type: String
        var customData: String?
    }

    struct AppleRequest: Encodable {
        var request: Body
        var customData: String?

        struct Body: Encodable {
            var version: Int
            var streamingKeys: [Key]
            enum CodingKeys: String, CodingKey {
                case version
                case streamingKeys = "streaming-keys"
            }
        }

        struct Key: Encodable {
            var id: Int
            var uri: String?
            var spc: String
        }

        enum CodingKeys: String, CodingKey {
            case request = "fairplay-streaming-request"
            case customData
        }
    }

    struct AppleResponse: Decodable {
        var response: Body

        struct Body: Decodable {
            var streamingKeys: [Key]
            enum CodingKeys: String, CodingKey { case streamingKeys = "streaming-keys" }
        }

        struct Key: Decodable {
            var ckc: String?
            var error: Int?
        }

        enum CodingKeys: String, CodingKey { case response = "fairplay-streaming-response" }
    }
}
