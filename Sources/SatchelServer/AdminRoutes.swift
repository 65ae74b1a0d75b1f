import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import SatchelBackplane
import SatchelBytes
import SatchelHTTP
import SatchelLicensing

/// What the operator dashboard reads and changes: its sessions, the license service's key store and audit, and
/// the devices registered for Satchel licenses (absent: the devices page says so).
package struct AdminConsole: Sendable {
    /// The sessions, and the operator key they are signed into with.
    package let sessions: AdminSessions
    let service: LicenseService
    let registry: DeviceRegistry?
    /// The backplane the devices page shows and acts through (absent: no downloads column, no remote wipe).
    let backplane: BackplaneService?

    /// A dashboard over `service` (and `registry`, and `backplane`), signed into with the operator key `sessions` holds.
    package init(sessions: AdminSessions, service: LicenseService, registry: DeviceRegistry?, backplane: BackplaneService? = nil) {
        self.sessions = sessions
        self.service = service
        self.registry = registry
        self.backplane = backplane
    }
}

/// The operator dashboard, `/admin`: server-rendered pages (swift-mustache templates in `Web/templates/admin-*`)
/// readable without JavaScript. A page without the session cookie sends the browser to the login form; a form
/// posted without the cookie (401) or without the session's CSRF token (403) is refused as problem+json.
struct AdminRoutes: RouteGroup {
    let console: AdminConsole
    let assets: WebAssets
    /// The session cookie's name.
    static let cookie = "satchel_admin"
    /// The largest form body read.
    static let formLimit = 16 * 1024
    /// Where sign-ins and refused sign-ins are recorded (never the key tried).
    static let audit = Logger(label: "satchel.audit")

    struct LoginForm: Decodable { var key: String }
    struct ActionForm: Decodable {
        var csrf: String
        /// The asset a remote delete names.
        var asset: String?
    }

    func register(on router: Router<SatchelRequestContext>) {
        WebAssets.serve(assets.admin, under: "/admin/static", what: "dashboard", on: router)
        router.get("/admin/login") { request, _ in
            if await session(request) != nil { return Self.redirect("/admin") }
            return page(.ok, "admin-login", ["title": "Sign in"])
        }
        router.post("/admin/login") { request, context in
            let form = try await Self.form(LoginForm.self, request, context)
            let address = context.channel.remoteAddress?.ipAddress ?? "unknown"
            let session: AdminSessions.Session
            switch await console.sessions.logIn(key: form.key, from: address) {
            case let .signedIn(signedIn):
                session = signedIn
                Self.audit.notice("dashboard sign-in", metadata: ["address": .string(address)])
            case .wrongKey:
                Self.audit.notice("dashboard sign-in refused: wrong operator key", metadata: ["address": .string(address)])
                try await Task.sleep(for: .milliseconds(400))  // a guess costs time
                guard PlayerRoutes.wantsHTML(request) else { throw AdminError.wrongOperatorKey }
                return page(.unauthorized, "admin-login", ["title": "Sign in", "error": "That is not the operator key."])
            case let .throttled(wait):
                Self.audit.warning("dashboard sign-in refused: too many failed sign-ins", metadata: ["address": .string(address), "retryAfter": .stringConvertible(wait)])
                let error = AdminError.tooManyLogins(retryAfter: wait)
                throw Problem(status: .tooManyRequests, type: error.problemType, detail: error.problemDetail, headers: [.retryAfter: String(wait)])
            }
            var response = Self.redirect("/admin")
            response.setCookie(Cookie(name: Self.cookie, value: session.id, maxAge: Int(session.expires.timeIntervalSinceNow), path: "/admin",
                                      httpOnly: true, sameSite: .strict))
            return response
        }
        router.post("/admin/logout") { request, context in
            let session = try await checked(request, context)
            await console.sessions.logOut(session.id)
            var response = Self.redirect("/admin/login")
            response.setCookie(Cookie(name: Self.cookie, value: "", maxAge: 0, path: "/admin", httpOnly: true, sameSite: .strict))
            return response
        }
        router.get("/admin") { request, _ in
            try await signedPage(request, "admin-overview", "Overview") { try await AdminPages(console: console).overview() }
        }
        router.get("/admin/assets") { request, _ in
            try await signedPage(request, "admin-assets", "Assets") { try await AdminPages(console: console).assets(query: request.uri.queryParameters) }
        }
        router.post("/admin/assets/{assetId}/delete") { request, context in
            _ = try await checked(request, context)
            let asset = context.parameters.get("assetId") ?? ""
            guard try await console.service.store.delete(asset) else { throw LicensingError.unknownAsset(String(asset.prefix(128))) }
            return Self.redirect("/admin/assets?deleted=\(asset.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")")
        }
        router.get("/admin/licenses") { request, _ in
            try await signedPage(request, "admin-licenses", "Licenses") { try await AdminPages(console: console).licenses(query: request.uri.queryParameters) }
        }
        router.get("/admin/devices") { request, _ in
            try await signedPage(request, "admin-devices", "Devices") { try await AdminPages(console: console).devices(query: request.uri.queryParameters) }
        }
        router.post("/admin/devices/{deviceId}/{action}") { request, context in
            let form = try await checkedForm(request, context).form
            guard let registry = console.registry else { throw Problem(status: .notFound, type: "not-found", detail: "this server registers no devices") }
            let device = context.parameters.get("deviceId") ?? ""
            let action = context.parameters.get("action") ?? ""
            if let disabled = ["disable": true, "enable": false][action] {
                // A killed device stays refused: its licenses are not enabled again.
                if !disabled, let killed = try? await console.backplane?.store.device(.device(device)), killed.state == .killed {
                    throw BackplaneError.deviceKilled(device)
                }
                guard try await registry.setDisabled(device, disabled) else {
                    throw Problem(status: .notFound, type: "not-found", detail: "no device of this ID is registered")
                }
                return Self.redirect("/admin/devices")
            }
            guard let backplane = console.backplane else { throw Problem(status: .notFound, type: "not-found", detail: "this server has no backplane") }
            let reference = try DeviceReference(device)
            switch action {
            case "downloads-on", "downloads-off": _ = try await backplane.setDownloadEnabled(reference, action == "downloads-on")
            case "wipe": _ = try await backplane.issue(.wipe, to: reference)
            case "kill": _ = try await backplane.issue(.kill, to: reference)
            case "delete-asset":
                guard let asset = form.asset?.trimmingCharacters(in: .whitespaces), !asset.isEmpty, asset.utf8.count <= 200 else {
                    throw BackplaneError.badRequest("name the asset to delete (1 to 200 bytes)")
                }
                _ = try await backplane.issue(.deleteAsset(asset), to: reference)
            default:
                throw Problem(status: .notFound, type: "not-found", detail: "a device is disabled or enabled, its downloads turned on or off, wiped, killed, or an asset deleted on it")
            }
            Self.audit.notice("dashboard: \(action) sent to a device", metadata: ["device": .string(device)])
            return Self.redirect("/admin/devices")
        }
        router.get("/admin/activity") { request, _ in
            try await signedPage(request, "admin-activity", "Activity") {
                guard let backplane = console.backplane else { return ["unavailable": true] }
                return try await AdminActivity(backplane: backplane, now: console.service.clock.now).page()
            }
        }
        router.get("/admin/users/{user}") { request, context in
            let raw = context.parameters.get("user") ?? ""
            let user = raw.removingPercentEncoding ?? raw
            return try await signedPage(request, "admin-user", "User \(user.prefix(200))") {
                guard let backplane = console.backplane else { throw Problem(status: .notFound, type: "not-found", detail: "this server has no backplane") }
                guard !user.isEmpty, user.utf8.count <= 200 else { throw BackplaneError.badRequest("a user is 1 to 200 bytes") }
                return try await AdminActivity(backplane: backplane, now: console.service.clock.now).user(user)
            }
        }
        router.get("/admin/events") { request, _ in
            try await signedPage(request, "admin-events", "Events") { try await AdminPages(console: console).events() }
        }
    }

    /// The session of the request's cookie, if it is live.
    private func session(_ request: Request) async -> AdminSessions.Session? {
        guard let id = request.cookies[Self.cookie]?.value, !id.isEmpty else { return nil }
        return await console.sessions.session(id)
    }

    /// A form post's session, once its cookie and CSRF token are checked.
    private func checked(_ request: Request, _ context: SatchelRequestContext) async throws -> AdminSessions.Session {
        try await checkedForm(request, context).session
    }

    /// A form post and its session, once its cookie and CSRF token are checked.
    private func checkedForm(_ request: Request, _ context: SatchelRequestContext) async throws -> (session: AdminSessions.Session, form: ActionForm) {
        guard let session = await session(request) else { throw AdminError.notSignedIn }
        let form = try await Self.form(ActionForm.self, request, context)
        guard ConstantTime.equals(Array(form.csrf.utf8), Array(session.csrf.utf8)) else { throw AdminError.badCSRF }
        return (session, form)
    }

    /// A signed-in page: `values` plus what every page shows (navigation, the CSRF token of its forms).
    private func signedPage(_ request: Request, _ template: String, _ title: String,
                            _ values: () async throws -> [String: Any]) async throws -> Response {
        guard let session = await session(request) else { return Self.redirect("/admin/login") }
        var all = try await values()
        all["title"] = title
        all["csrf"] = session.csrf
        all["nav"] = [("/admin", "Overview"), ("/admin/assets", "Assets"), ("/admin/licenses", "Licenses"), ("/admin/devices", "Devices"),
                      ("/admin/activity", "Activity"), ("/admin/events", "Events")].map { ["href": $0.0, "label": $0.1, "current": $0.1 == title] as [String: Any] }
        return page(.ok, template, all)
    }

    private func page(_ status: HTTPResponse.Status, _ template: String, _ values: [String: Any]) -> Response {
        Response(status: status, headers: PlayerRoutes.pageHeaders, body: .init(byteBuffer: ByteBuffer(string: assets.render(template, values))))
    }

    static func redirect(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store", .contentLength: "0"])
    }

    /// A URL-encoded form body (at most ``formLimit`` bytes) as `T`; 400 when it is not one.
    static func form<T: Decodable>(_ type: T.Type, _ request: Request, _ context: SatchelRequestContext) async throws -> T {
        var request = request
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: formLimit)
        } catch is NIOTooManyBytesError {
            throw BodyLimitMiddleware<SatchelRequestContext>.tooLarge(formLimit)
        }
        do {
            return try URLEncodedFormDecoder().decode(T.self, from: String(buffer: body))
        } catch {
            throw Problem(status: .badRequest, type: "bad-request", detail: "the form is incomplete")
        }
    }
}
