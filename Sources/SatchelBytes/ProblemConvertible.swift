/// An error every Satchel module's error type adopts, in its own module: a stable code, the HTTP status
/// that fits it (a plain number: this layer knows nothing of HTTP libraries) and a detail that is safe to
/// show a remote client. `SatchelHTTP` turns any such error into an RFC 9457 problem+json answer, so no
/// central table of every module's errors exists.
public protocol ProblemConvertible: Error, CustomStringConvertible, Sendable {
    /// A stable identifier (`unknown-asset`, `spc-truncated`): logs, metrics and tests rely on it.
    var code: String { get }
    /// The problem type slug (`https://satchel.dev/problems/<slug>`); by default the code.
    var problemType: String { get }
    /// The HTTP status that fits; by default 500.
    var httpStatus: Int { get }
    /// A detail for a remote client; by default the description. Never a secret.
    var problemDetail: String { get }
}

extension ProblemConvertible {
    public var problemType: String { code }
    public var httpStatus: Int { 500 }
    public var problemDetail: String { description }
}
