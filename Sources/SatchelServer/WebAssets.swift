import Foundation
import HTTPTypes
import Hummingbird
import Mustache
import SatchelBytes
import SatchelHTTP
import SatchelSystem

/// The files of Satchel's web pages, read once from the module's `Web/` resources: the static assets served under
/// `/player/` (the browser player's ES modules and style sheet) and the Mustache templates the pages render.
package struct WebAssets: Sendable {
    /// One static file: its bytes, Content-Type and a strong ETag (a digest of the bytes).
    package struct File: Sendable {
        /// The file's bytes.
        package var bytes: [UInt8]
        /// Its Content-Type.
        package var contentType: String
        /// Its strong ETag.
        package var etag: String
    }

    /// The player's static files by name (`player.js`).
    package let player: [String: File]
    /// The dashboard's static files by name (`admin.css`).
    package let admin: [String: File]
    /// The OpenAPI 3.1 document of `satchel serve` (`Web/openapi.json`), served at `/openapi.json`.
    package let openAPI: File
    /// The page templates (`play`, `notice`).
    let templates: MustacheLibrary

    /// Reads the resources; throws when the module's resources are missing (a binary copied without its bundle).
    package init() throws(WebAssetsError) {
        guard let web = Bundle.module.url(forResource: "Web", withExtension: nil) else { throw .missing("Web") }
        try self.init(folder: web)
    }

    /// Reads the web files from `folder` (with `player/`, `admin/`, `templates/` and `openapi.json` inside).
    package init(folder: URL) throws(WebAssetsError) {
        player = try Self.files(in: folder.appendingPathComponent("player"))
        admin = try Self.files(in: folder.appendingPathComponent("admin"))
        openAPI = Self.file(try Self.read("openapi.json", below: folder), named: "openapi.json")
        var templates: [String: MustacheTemplate] = [:]
        for name in try Self.names(in: folder.appendingPathComponent("templates")) where name.hasSuffix(".mustache") {
            let text = String(decoding: try Self.read("templates/\(name)", below: folder), as: UTF8.self)
            do { templates[String(name.dropLast(".mustache".count))] = try MustacheTemplate(string: text) } catch {
                throw .missing("templates/\(name) (\(error))")
            }
        }
        self.templates = MustacheLibrary(templates: templates)
    }

    /// The static files of `folder`, each with its type and a strong ETag.
    private static func files(in folder: URL) throws(WebAssetsError) -> [String: File] {
        var files: [String: File] = [:]
        for name in try names(in: folder) {
            files[name] = file(try read(name, below: folder), named: name)
        }
        return files
    }

    /// A file's bytes with the type its name gives and a strong ETag.
    private static func file(_ bytes: [UInt8], named name: String) -> File {
        // FNV-1a over the bytes: a validator, not a security measure.
        let digest = bytes.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
        return File(bytes: bytes, contentType: ContentTypes.type(of: name), etag: "\"\(String(digest, radix: 16))-\(String(bytes.count, radix: 16))\"")
    }

    /// Serves `files` at `path/{file}` (404 problem for any other name).
    static func serve(_ files: [String: File], under path: String, what: String, on router: Router<SatchelRequestContext>) {
        router.get("\(path)/{file}") { request, context in
            guard let name = context.parameters.get("file"), let file = files[name] else {
                throw Problem(status: .notFound, type: "not-found", detail: "no such \(what) file")
            }
            return response(file, request)
        }
    }

    /// A static file's answer to `request`: 200 with the bytes, or 304 when its `If-None-Match` names the ETag.
    static func response(_ file: File, _ request: Request) -> Response {
        var headers: HTTPFields = [.contentType: file.contentType, .eTag: file.etag, .cacheControl: "no-cache", .xContentTypeOptions: "nosniff"]
        if let ifNoneMatch = request.headers[.ifNoneMatch], OriginConditions.matches(file.etag, ifNoneMatch: ifNoneMatch) {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentLength] = String(file.bytes.count)
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: file.bytes)))
    }

    /// Renders the template `name` with `values` (every `{{value}}` is HTML-escaped).
    func render(_ name: String, _ values: [String: Any]) -> String {
        templates.render(values, withTemplate: name) ?? ""
    }

    private static func names(in folder: URL) throws(WebAssetsError) -> [String] {
        do { return try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix(".") }.sorted() } catch {
            throw .missing(folder.lastPathComponent)
        }
    }

    /// The bytes of `relative` below `folder`, opened through the no-follow seam (a link anywhere on the way is
    /// refused, as the proxy and the origin refuse one); a file over 16 MiB is refused too.
    private static func read(_ relative: String, below folder: URL) throws(WebAssetsError) -> [UInt8] {
        let bytes: [UInt8]?
        do { bytes = try ConfinedFile.open(relative, below: folder.path).readAll(limit: 16 << 20) } catch { throw .missing(relative) }
        guard let bytes else { throw .missing(relative) }
        return bytes
    }
}

/// The web resources could not be read.
package enum WebAssetsError: ProblemConvertible {
    /// A resource is missing or unreadable.
    case missing(String)

    /// `web-assets`.
    package var code: String { "web-assets" }
    package var httpStatus: Int { 500 }
    package var description: String {
        switch self {
        case let .missing(name): return "the web resources are missing (\(name)): run satchel from its build folder, or keep satchel_SatchelServer.resources beside it"
        }
    }
}
