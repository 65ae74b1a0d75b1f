import Foundation
import SatchelBytes
import HTTPTypes
import Hummingbird
import SatchelHTTP

/// Entitlement tokens for anyone who asks, for `satchel demo` only: `GET /demo/token/{assetId}` answers
/// `{"token", "expires"}` (or the bare token for `Accept: text/plain`), signed by `sign`. The browser player asks
/// here when its address carries no token. Never part of a production server: whoever reaches it gets a token.
package struct DemoTokens: Sendable {
    /// Signs a token for an asset; returns it and its expiry.
    package let sign: @Sendable (String) async throws -> (token: String, expires: Date)

    /// Tokens from `sign`.
    package init(sign: @escaping @Sendable (String) async throws -> (token: String, expires: Date)) {
        self.sign = sign
    }

    /// The endpoint of an asset's token (what the player page is told).
    static func path(_ asset: String) -> String { "/demo/token/\(asset)" }
}

struct DemoTokenRoutes: RouteGroup {
    let tokens: DemoTokens

    func register(on router: Router<SatchelRequestContext>) {
        router.get("/demo/token/{assetId}") { request, context in
            // Only for pages of this machine's loopback: a page of another site that made its name resolve to
            // 127.0.0.1 (DNS rebinding) sends its own name as Host.
            guard LoopbackHostMiddleware<SatchelRequestContext>.isLoopback(request.head.authority) else {
                throw LoopbackHostMiddleware<SatchelRequestContext>.refusal
            }
            let asset = context.parameters.get("assetId") ?? ""
            guard PlayerRoutes.isAssetID(asset) else {
                throw Problem(status: .badRequest, type: "bad-request", detail: "an asset ID is 1 to 128 letters, digits, dots, dashes and underscores")
            }
            let (token, expires) = try await tokens.sign(asset)
            var headers: HTTPFields = [.cacheControl: "no-store"]
            if request.headers[.accept]?.contains("text/plain") == true {
                headers[.contentType] = "text/plain; charset=utf-8"
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: token)))
            }
            headers[.contentType] = "application/json"
            let body = try JSONCoding.encoder().encode(["token": token, "expires": ISODate.string(expires)])
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
    }
}
