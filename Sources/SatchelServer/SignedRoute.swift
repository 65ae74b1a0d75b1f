import Hummingbird
import SatchelLicensing
import SatchelRights

/// A device's signed request is answered on the route it names only (its `route` claim: method and path): one
/// signed to ask for a permission cannot be posted to acknowledge a command. The claim is read here before the
/// signature is checked; the check that follows covers the same bytes, so a changed route fails it.
enum SignedRoute {
    /// Refuses `signed` unless it names `request`'s method and path. A request that cannot be read is left to the
    /// signature check, which refuses it with its own reason.
    static func check(_ signed: String, for request: Request) throws(LicensingError) {
        guard let claims = try? SignedToken.unverifiedClaims(signed, as: DeviceRequestClaims.self) else { return }
        let route = DeviceRequestClaims.route(method: request.method.rawValue, path: request.uri.path)
        guard claims.route == route else {
            throw .notEntitled("the request was signed for \(claims.route.map { String($0.prefix(120)) } ?? "no route"), not \(route.prefix(120))")
        }
    }
}
