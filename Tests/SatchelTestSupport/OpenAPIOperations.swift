import Foundation

/// The operations an OpenAPI document describes, as `METHOD /path` (`GET /play/{assetId}`): what the tests compare
/// with the server's routes and with what schemathesis tested.
public enum OpenAPIOperations {
    /// The HTTP methods a path item may hold (OpenAPI 3.1 §4.8.9).
    public static let methods = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

    /// Every operation of `document` (a parsed OpenAPI document).
    public static func of(_ document: [String: Any]) -> Set<String> {
        let paths = document["paths"] as? [String: [String: Any]] ?? [:]
        return Set(paths.flatMap { path, item in item.keys.filter { methods.contains($0) }.map { "\($0.uppercased()) \(path)" } })
    }
}
