import Foundation
import Hummingbird
import Logging
import SatchelFairPlay
import SatchelLicensing

/// `satchel serve`: the license service as a Hummingbird application.
public struct LicenseServer: Sendable {
    /// Builds the application for `service`, listening on `host`:`port`.
    public static func application(service: LicenseService, certificate: [UInt8]?, host: String = "127.0.0.1", port: Int = 8080,
                                   logger: Logger = Logger(label: "satchel.serve")) -> some ApplicationProtocol {
        let router = Router()
        LicenseRoutes(service: service, certificate: certificate, metrics: LicenseMetrics(), logger: logger).register(on: router)
        return Application(router: router, configuration: .init(address: .hostname(host, port: port), serverName: "Satchel"), logger: logger)
    }
}
