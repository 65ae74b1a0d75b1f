import Foundation

/// A database error in words a person can act on. PostgreSQL's errors print a generic text ("Generic description to
/// prevent accidental leakage") unless reflected: here the server's own message and SQLSTATE are taken from the
/// reflection, and the usual causes say what to run. Never includes a password or a connection string.
package struct DatabaseFailure: Sendable, Equatable {
    /// What failed, and what to do.
    package var text: String
    /// True when trying again cannot help (a database or role that does not exist, a wrong password).
    package var isPermanent: Bool

    package init(_ error: any Error) {
        let reflected = String(reflecting: error)
        let state = Self.field("sqlState", in: reflected)
        let message = Self.field("message", in: reflected)
        switch state {
        case "3D000"?:
            text = "\(message ?? "the database does not exist") (PostgreSQL \(state ?? "")): create it, e.g. createdb -O ROLE NAME, or correct the database name in the URL"
            isPermanent = true
        case let code? where code.hasPrefix("28"):
            text = "\(message ?? "the role was refused") (PostgreSQL \(code)): check the user name and password in the URL, and pg_hba.conf"
            isPermanent = true
        case "42501"?:
            text = "\(message ?? "permission denied") (PostgreSQL 42501): the role needs the right to create tables in the database (make it the database's owner)"
            isPermanent = true
        case let code?:
            text = "\(message ?? "an error") (PostgreSQL \(code))"
            isPermanent = false
        case nil where reflected.contains("Connection refused") || reflected.contains("connectionRefused"):
            text = "the connection was refused: is PostgreSQL running and listening at the URL's host and port?"
            isPermanent = false
        case nil:
            text = String(String(describing: error).prefix(200))
            isPermanent = false
        }
    }

    /// `name: value` in a reflected error, up to the next `, ` or `]`.
    private static func field(_ name: String, in text: String) -> String? {
        guard let start = text.range(of: "\(name): ") else { return nil }
        let rest = text[start.upperBound...]
        let end = rest.range(of: ", ")?.lowerBound ?? rest.firstIndex(of: "]") ?? rest.endIndex
        let value = rest[..<end].trimmingCharacters(in: .whitespaces)
        return value.isEmpty ? nil : String(value.prefix(200))
    }
}
