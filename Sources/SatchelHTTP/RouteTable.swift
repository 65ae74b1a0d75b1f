import HTTPTypes
import Hummingbird
import SatchelBytes
import SatchelSystem

/// The routes of an application, for answering a request that matches none: 405 with `Allow` when the path
/// exists with other methods, else 404 — both as problem+json.
public final class RouteTable: Sendable {
    private let routes = Locked<[(path: RouterPath, method: HTTPRequest.Method)]>([])

    /// An empty table; ``load(_:)`` fills it once the routes are registered.
    public init() {}

    /// Takes the router's routes.
    public func load<Context>(_ router: Router<Context>) {
        let list = router.routes.map { ($0.path, $0.method) }
        routes.withLock { $0 = list }
    }

    /// The methods routed for `path` (HEAD with GET).
    public func methods(for path: String) -> [HTTPRequest.Method] {
        let components = path.split(separator: "/", omittingEmptySubsequences: true)
        let table = routes.current
        var methods: [HTTPRequest.Method] = []
        for route in table where Self.matches(route.path, components) && !methods.contains(route.method) {
            methods.append(route.method)
            if route.method == .get, !methods.contains(.head) { methods.append(.head) }
        }
        return methods
    }

    private static func matches(_ path: RouterPath, _ components: [Substring]) -> Bool {
        let elements = path.components
        if elements.last == .recursiveWildcard {
            // `**` takes one component or more (as the router does), after a prefix that matches.
            guard components.count >= elements.count else { return false }
            return zip(elements.dropLast(), components).allSatisfy { $0 ~= $1 }
        }
        guard elements.count == components.count else { return false }
        return zip(elements, components).allSatisfy { $0 ~= $1 }
    }
}
