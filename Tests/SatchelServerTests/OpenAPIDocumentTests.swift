import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import SatchelBackplane
import SatchelBytes
import SatchelHTTP
import SatchelLicensing
@testable import SatchelServer
import SatchelTestSupport
import Testing

/// The OpenAPI document (`Web/openapi.json`) against the server it describes: every route is documented and every
/// documented operation is routed, the document holds together (references, path parameters, operation IDs,
/// errors as problem+json), and `/openapi.json` serves it. What each operation answers is checked live by
/// schemathesis (`OpenAPIContractTests`).
@Suite("OpenAPI: the document and the routes")
struct OpenAPIDocumentTests {
    /// The builder of a server with every part: devices, origin, player, dashboard and demo tokens.
    static func everything() async throws -> (ApplicationBuilder, LicensingDatabase, WebAssets) {
        let directory = try TestMedia.temporaryDirectory("openapi")
        let database = try await LicensingDatabase(dataDirectory: directory.path, url: nil, more: BackplaneMigrations.all)
        let kek = try KeyEncryptionKey(SecretBytes.random(32))
        let service = LicenseService(store: FluentKeyStore(database: database.database, kek: kek), ksm: nil,
                                     verifier: try await EntitlementVerifier(hmacSecret: Array("a secret of thirty-two bytes at least!".utf8)))
        let registry = DeviceRegistry(database: database.database, kek: kek)
        let web = try WebAssets()
        let admin = AdminConsole(sessions: try AdminSessions(operatorKey: SecretBytes(Array("an-operator-key-of-some-length".utf8))),
                                 service: service, registry: registry)
        let devices = DeviceLicensing(service: service, registry: registry)
        let backplane = BackplaneService(store: FluentBackplaneStore(database: database.database), slots: FluentStreamSlots(database: database.database),
                                         events: FluentEventStore(database: try database.sql()),
                                         feeds: FluentFeedStore(database: database.database),
                                         hub: BackplaneWakeHub(), licensing: devices,
                                         sessions: admin.sessions)
        let builder = LicenseServer.builder(service: service, devices: devices, backplane: backplane,
                                            origin: try OriginFiles(folder: directory.path), web: web, admin: admin,
                                            demoTokens: DemoTokens { _ in ("token", Date()) }, certificate: nil, port: 0)
        return (builder, database, web)
    }

    static func document(_ web: WebAssets) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(web.openAPI.bytes)) as? [String: Any])
    }

    /// `METHOD /path` of every route; the origin's catch-all `**` is the document's `{path}` (OpenAPI has no other way to say it).
    static func routed(_ builder: ApplicationBuilder) -> Set<String> {
        Set(builder.router().0.routes.map { "\($0.method.rawValue) \($0.path.description.replacingOccurrences(of: "**", with: "{path}"))" })
    }

    @Test("every route of satchel serve is documented, and every documented operation is a route")
    func routesMatchTheDocument() async throws {
        let (builder, database, web) = try await Self.everything()
        defer { Task { await database.shutdown() } }
        let routed = Self.routed(builder), documented = OpenAPIOperations.of(try Self.document(web))
        #expect(routed.count > 25, "the server with every part has its routes: \(routed.sorted())")
        #expect(routed.subtracting(documented).isEmpty, "routes the document does not describe: \(routed.subtracting(documented).sorted())")
        #expect(documented.subtracting(routed).isEmpty, "documented operations no route serves: \(documented.subtracting(routed).sorted())")
        // The comparison bites: a server without the dashboard lacks documented operations.
        var partial = LicenseServer.builder(service: LicenseService(store: FluentKeyStore(database: database.database, kek: try KeyEncryptionKey(SecretBytes.random(32))),
                                                                    ksm: nil, verifier: nil), certificate: nil, port: 0)
        partial.add(ExtraRoute())
        let partialRoutes = Self.routed(partial)
        #expect(documented.subtracting(partialRoutes).contains("POST /admin/login"))
        #expect(partialRoutes.subtracting(documented) == ["GET /undocumented"])
    }

    /// A route the document does not describe.
    struct ExtraRoute: RouteGroup {
        func register(on router: Router<SatchelRequestContext>) { router.get("/undocumented") { _, _ in "?" } }
    }

    @Test("the document holds together: OpenAPI 3.1, unique operation IDs, references that resolve, path parameters declared, errors as problem+json")
    func documentIsConsistent() async throws {
        let document = try Self.document(try WebAssets())
        #expect(document["openapi"] as? String == "3.1.0")
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        var operationIDs: [String] = []
        for (path, item) in paths {
            let templated = Set(path.split(separator: "/").filter { $0.hasPrefix("{") && $0.hasSuffix("}") }.map { String($0.dropFirst().dropLast()) })
            for method in OpenAPIOperations.methods {
                guard let operation = item[method] as? [String: Any] else { continue }
                let label = "\(method.uppercased()) \(path)"
                operationIDs.append(operation["operationId"] as? String ?? "")
                let parameters = (operation["parameters"] as? [[String: Any]] ?? []) + (item["parameters"] as? [[String: Any]] ?? [])
                let declared = Set(parameters.filter { $0["in"] as? String == "path" && $0["required"] as? Bool == true }.compactMap { $0["name"] as? String })
                #expect(declared == templated, "\(label): path parameters \(declared.sorted()) for the template's \(templated.sorted())")
                let responses = try #require(operation["responses"] as? [String: Any], "\(label) has responses")
                #expect(!responses.isEmpty, "\(label)")
                for (status, value) in responses {
                    let response = try Self.resolve(value, in: document)
                    guard let code = Int(status), code >= 400 else { continue }
                    let types = Set((response["content"] as? [String: Any] ?? [:]).keys)
                    #expect(types.contains("application/problem+json") && types.isSubset(of: ["application/problem+json", "text/html"]),
                            "\(label) \(status) answers \(types.sorted())")
                }
            }
        }
        #expect(Set(operationIDs).count == operationIDs.count && !operationIDs.contains(""), "operation IDs are unique: \(operationIDs.sorted())")
        let references = Self.references(in: document)
        #expect(references.count > 50)
        for reference in references { #expect(throws: Never.self, "\(reference) resolves") { try Self.resolve(["$ref": reference], in: document) } }
    }

    /// Every `$ref` of `value`.
    static func references(in value: Any) -> [String] {
        switch value {
        case let object as [String: Any]:
            let own = (object["$ref"] as? String).map { [$0] } ?? []
            return own + object.values.flatMap { references(in: $0) }
        case let array as [Any]:
            return array.flatMap { references(in: $0) }
        default:
            return []
        }
    }

    struct Unresolved: Error {
        let reference: String
    }

    /// `value` itself, or what its local `$ref` (`#/components/…`) points at.
    static func resolve(_ value: Any, in document: [String: Any]) throws -> [String: Any] {
        guard let object = value as? [String: Any] else { throw Unresolved(reference: "\(value)") }
        guard let reference = object["$ref"] as? String else { return object }
        guard reference.hasPrefix("#/") else { throw Unresolved(reference: reference) }
        var current: Any = document
        for key in reference.dropFirst(2).split(separator: "/") {
            guard let next = (current as? [String: Any])?[String(key)] else { throw Unresolved(reference: reference) }
            current = next
        }
        guard let resolved = current as? [String: Any] else { throw Unresolved(reference: reference) }
        return resolved
    }

    @Test("GET /openapi.json serves the document (JSON, readable from any origin, 304 for its ETag)")
    func served() async throws {
        let (builder, database, web) = try await Self.everything()
        defer { Task { await database.shutdown() } }
        try await builder.build().test(.router) { client in
            let response = try await client.execute(uri: "/openapi.json", method: .get)
            #expect(response.status == .ok && Array(response.body.readableBytesView) == web.openAPI.bytes)
            #expect(response.headers[.contentType] == "application/json" && response.headers[.accessControlAllowOrigin] == "*")
            let etag = try #require(response.headers[.eTag])
            #expect(try await client.execute(uri: "/openapi.json", method: .get, headers: [.ifNoneMatch: etag]).status == .notModified)
        }
    }
}
