import Foundation
import SatchelBytes

/// What a license request carries beyond its challenge, for license servers that expect it: custom HTTP
/// headers, opaque custom data (the agent does not interpret it, it only includes it in
/// the challenge) and a license token (`licenseToken`).
///
/// Custom data travels as a `customData` member of the request's JSON body, or, for requests without a JSON
/// body (a raw SPC, an AES-128 key GET), base64-encoded in the ``customDataHeader`` header. The token is sent
/// as `Authorization: Bearer …`, or as the whole value of ``tokenHeader`` when one is named (some DRM services
/// take their token in a header of their own).
public struct LicenseRequestExtras: Sendable, Equatable {
    /// The header that carries custom data for requests without a JSON body.
    public static let customDataHeader = "X-Satchel-Custom-Data"
    /// At most this many custom headers.
    public static let maximumHeaders = 32
    /// Custom data is at most this many bytes.
    public static let maximumCustomData = 64 * 1024

    /// Custom headers, sent in this order after the token and custom data headers.
    public private(set) var headers: [(name: String, value: String)]
    /// Opaque custom data (XML, JSON, text).
    public private(set) var customData: String?
    /// The license token.
    public private(set) var token: String?
    /// The header the token goes in (nil: `Authorization: Bearer`).
    public private(set) var tokenHeader: String?

    /// Checks and creates extras: header names are HTTP tokens, values hold no control characters, custom data
    /// is at most 64 KB.
    public init(headers: [(name: String, value: String)] = [], customData: String? = nil, token: String? = nil,
                tokenHeader: String? = nil) throws(StreamError) {
        guard headers.count <= Self.maximumHeaders else { throw .invalidArgument("at most \(Self.maximumHeaders) custom headers") }
        for header in headers {
            try Self.checkName(header.name)
            guard !header.value.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F }) else {
                throw .invalidArgument("the value of header \(header.name) holds a control character")
            }
        }
        if let tokenHeader { try Self.checkName(tokenHeader) }
        if let token, token.isEmpty || token.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) {
            throw .invalidArgument("the license token is empty or holds spaces or control characters")
        }
        if let customData, customData.utf8.count > Self.maximumCustomData {
            throw .invalidArgument("custom data is at most \(Self.maximumCustomData) bytes")
        }
        self.headers = headers
        self.customData = customData
        self.token = token
        self.tokenHeader = tokenHeader
    }

    /// Reads `Name: value` (as `curl -H` takes it).
    public static func header(_ text: String) throws(StreamError) -> (name: String, value: String) {
        // The text is never echoed: a header may carry a secret.
        guard let colon = text.firstIndex(of: ":") else { throw .invalidArgument("a header is \"Name: value\" (this one has no colon)") }
        let name = String(text[..<colon]).trimmingCharacters(in: .whitespaces)
        let value = String(text[text.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
        try checkName(name)
        return (name, value)
    }

    /// The headers to send: the token, custom data (only when `bodyCarriesCustomData` is false), then the
    /// custom headers.
    public func httpHeaders(bodyCarriesCustomData: Bool) -> [(name: String, value: String)] {
        var all: [(name: String, value: String)] = []
        if let token { all.append(tokenHeader.map { ($0, token) } ?? ("Authorization", "Bearer \(token)")) }
        if let customData, !bodyCarriesCustomData { all.append((Self.customDataHeader, Data(customData.utf8).base64EncodedString())) }
        return all + headers
    }

    private static func checkName(_ name: String) throws(StreamError) {
        let allowed = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        guard !name.isEmpty, name.count <= 100, name.allSatisfy(allowed.contains) else {
            throw .invalidArgument("\"\(name.prefix(40))\" is not an HTTP header name")
        }
    }

    public static func == (lhs: LicenseRequestExtras, rhs: LicenseRequestExtras) -> Bool {
        lhs.headers.map { [$0.name, $0.value] } == rhs.headers.map { [$0.name, $0.value] } && lhs.customData == rhs.customData
            && lhs.token == rhs.token && lhs.tokenHeader == rhs.tokenHeader
    }
}
