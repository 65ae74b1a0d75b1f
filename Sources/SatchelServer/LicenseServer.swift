import Foundation
import Hummingbird
import Logging
import NIOCore
import Prometheus
import ServiceLifecycle
import SatchelHTTP
import SatchelLicensing

/// `satchel serve`: the license service as a Hummingbird application, assembled by the HTTP kit's
/// ``ApplicationBuilder`` from route groups (licenses, devices, the origin and the service endpoints).
package struct LicenseServer: Sendable {
    /// Builds the application for `service`, listening on `host`:`port`, with its connections under the
    /// registry's limits (timeouts and the connection cap; see ``ConnectionLimits``). `services` run and stop
    /// with the server (a ``LifecycleService`` that closes the database).
    /// `devices` serves registration, Satchel licenses and signed time (absent: those routes are not there);
    /// `backplane` adds the backplane's device endpoints and, with an operator key, its operator API (`/backplane/…`);
    /// `origin` publishes a folder of packages under `/content/` (absent: no origin); `web` adds the browser player
    /// (`/play/{assetId}`, `/player/…`), the OpenAPI document (`/openapi.json`) and, with `admin`, the operator dashboard (`/admin`); `demoTokens` (for
    /// `satchel demo` only) gives tokens to anyone at `/demo/token/{assetId}`.
    package static func application(service: LicenseService, devices: DeviceLicensing? = nil, backplane: BackplaneService? = nil, origin: OriginFiles? = nil, web: WebAssets? = nil,
                                   admin: AdminConsole? = nil, demoTokens: DemoTokens? = nil,
                                   certificate: [UInt8]?, host: String = "127.0.0.1", port: Int = 8080,
                                   connections: ConnectionRegistry = ConnectionRegistry(limits: ConnectionLimits()),
                                   services: [any Service] = [], tls: TLSIdentity? = nil,
                                   logger: Logger = Logger(label: "satchel.serve"),
                                   onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }) -> some ApplicationProtocol {
        var builder = builder(service: service, devices: devices, backplane: backplane, origin: origin, web: web, admin: admin, demoTokens: demoTokens,
                              certificate: certificate, host: host, port: port, connections: connections, logger: logger)
        for service in services { builder.add(service: service) }
        builder.tls = tls
        return builder.build(onServerRunning: onServerRunning)
    }

    /// The builder of ``application(service:devices:backplane:origin:web:admin:demoTokens:certificate:host:port:connections:services:tls:logger:onServerRunning:)``
    /// with the route groups its arguments ask for; its `router()` lists every route (the OpenAPI document is checked against them).
    package static func builder(service: LicenseService, devices: DeviceLicensing? = nil, backplane: BackplaneService? = nil, origin: OriginFiles? = nil, web: WebAssets? = nil,
                               admin: AdminConsole? = nil, demoTokens: DemoTokens? = nil, certificate: [UInt8]?,
                               host: String = "127.0.0.1", port: Int = 8080,
                               connections: ConnectionRegistry = ConnectionRegistry(limits: ConnectionLimits()),
                               logger: Logger = Logger(label: "satchel.serve")) -> ApplicationBuilder {
        let metrics = LicenseMetrics()
        var builder = ApplicationBuilder(host: host, port: port, connections: connections,
                                         metrics: PrometheusMetricsFactory(registry: metrics.registry), logger: logger)
        builder.add(ServiceRoutes(metrics: metrics))
        builder.add(LicenseRoutes(service: service, certificate: certificate, metrics: metrics, logger: logger))
        if let devices { builder.add(DeviceLicenseRoutes(licensing: devices, metrics: metrics, backplane: backplane)) }
        if let backplane {
            builder.add(BackplaneDeviceRoutes(backplane: backplane))
            builder.add(BackplaneSubscriptionRoutes(backplane: backplane))
            if let sessions = backplane.sessions { builder.add(BackplaneOperatorRoutes(backplane: backplane, sessions: sessions)) }
        }
        if let origin { builder.add(OriginRoutes(files: origin)) }
        if let web { builder.add(PlayerRoutes(assets: web, origin: origin, tokenEndpoint: demoTokens == nil ? nil : DemoTokens.path)) }
        if let web { builder.add(OpenAPIRoute(document: web.openAPI)) }
        if let web, let admin { builder.add(AdminRoutes(console: admin, assets: web)) }
        if let demoTokens { builder.add(DemoTokenRoutes(tokens: demoTokens)) }
        return builder
    }
}
