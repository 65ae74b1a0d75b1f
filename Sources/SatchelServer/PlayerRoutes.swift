import HTTPTypes
import Hummingbird
import SatchelHTTP

/// The browser player: `GET /play/{assetId}` renders the page that plays the asset's CMAF package from the origin
/// (`/content/{assetId}/manifest.mpd`) with Media Source and Encrypted Media Extensions (W3C Clear Key), and
/// `GET /player/{file}` serves its ES modules and style sheet (``WebAssets``).
struct PlayerRoutes: RouteGroup {
    let assets: WebAssets
    /// The published packages; without an origin every page says that nothing is published.
    let origin: OriginFiles?
    /// Where the page asks for an entitlement token when its address has none (the demo's endpoint), if anywhere.
    let tokenEndpoint: (@Sendable (String) -> String)?

    /// Headers of every page: scripts, styles and media only from this server (media also from MSE's blob: URLs),
    /// no framing, no referrer, no sniffing.
    static let pageHeaders: HTTPFields = [
        .contentType: "text/html; charset=utf-8",
        .contentSecurityPolicy: "default-src 'self'; script-src 'self'; style-src 'self'; media-src 'self' blob:; img-src 'self' data:; "
            + "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
        .xContentTypeOptions: "nosniff",
        HTTPField.Name("Referrer-Policy")!: "no-referrer",
        .cacheControl: "no-store",
    ]

    /// An asset ID a page accepts: what `satchel keys import --asset-id` and a folder name can both be.
    static func isAssetID(_ text: String) -> Bool {
        guard let first = text.utf8.first, text.utf8.count <= 128, first != UInt8(ascii: "."), first != UInt8(ascii: "-") else { return false }
        return text.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x2E || byte == 0x2D || byte == 0x5F
        }
    }

    func register(on router: Router<SatchelRequestContext>) {
        WebAssets.serve(assets.player, under: "/player", what: "player", on: router)
        router.get("/play/{assetId}") { request, context in
            let asset = context.parameters.get("assetId") ?? ""
            guard Self.isAssetID(asset) else {
                return try notice(request, .badRequest, type: "bad-request", title: "Not an asset ID",
                                  "An asset ID is 1 to 128 letters, digits, dots, dashes and underscores.")
            }
            guard let origin else {
                return try notice(request, .notFound, type: "not-found", title: asset, "This server publishes no packages: start it with satchel serve --origin DIR.")
            }
            guard (try? origin.file([asset, "manifest.mpd"])) != nil else {
                return try notice(request, .notFound, type: "not-found", title: asset,
                                  "No CMAF package of \(asset) is published (no \(asset)/manifest.mpd in the origin folder).")
            }
            var values: [String: Any] = ["asset": asset, "manifest": "/content/\(asset)/manifest.mpd"]
            if let tokenEndpoint { values["tokenEndpoint"] = tokenEndpoint(asset) }
            return page(.ok, "play", values)
        }
    }

    /// True when the client asks for HTML (a browser): its refusals are then pages, else problem+json.
    static func wantsHTML(_ request: Request) -> Bool {
        request.headers[.accept]?.lowercased().contains("text/html") == true
    }

    /// A refusal: the notice page for a browser, the problem (thrown) for any other client.
    private func notice(_ request: Request, _ status: HTTPResponse.Status, type: String, title: String, _ message: String) throws -> Response {
        guard Self.wantsHTML(request) else { throw Problem(status: status, type: type, detail: message) }
        return page(status, "notice", ["title": title, "message": message])
    }

    private func page(_ status: HTTPResponse.Status, _ template: String, _ values: [String: Any]) -> Response {
        Response(status: status, headers: Self.pageHeaders, body: .init(byteBuffer: ByteBuffer(string: assets.render(template, values))))
    }
}
