import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import SatchelFairPlay
import SatchelHTTP
import SatchelLicensing

/// `satchel serve`: the license service as a Hummingbird application.
public struct LicenseServer: Sendable {
    /// Builds the application for `service`, listening on `host`:`port`, with its connections under the
    /// registry's limits (timeouts and the connection cap; see ``ConnectionLimits``).
    public static func application(service: LicenseService, certificate: [UInt8]?, host: String = "127.0.0.1", port: Int = 8080,
                                   connections: ConnectionRegistry = ConnectionRegistry(limits: ConnectionLimits()),
                                   logger: Logger = Logger(label: "satchel.serve"),
                                   onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }) -> some ApplicationProtocol {
        let router = Router()
        let table = RouteTable()
        router.add(middleware: ProblemMiddleware(table: table))
        LicenseRoutes(service: service, certificate: certificate, metrics: LicenseMetrics(), logger: logger).register(on: router)
        table.load(router)
        return Application(router: router, server: .guardedHTTP1(registry: connections),
                           configuration: .init(address: .hostname(host, port: port), serverName: "Satchel"),
                           onServerRunning: onServerRunning,
                           logger: logger)
    }
}
