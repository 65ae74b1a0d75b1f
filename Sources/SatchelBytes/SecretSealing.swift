/// Seals a secret kept at rest (a bearer token, a header value) so that a copy of the file that holds it — a
/// backup, another user's read — does not give it away: only the device that sealed it opens it. A seam: the
/// device agent implements it with a key derived from the device key.
public protocol SecretSealing: Sendable {
    /// `text` sealed, as text safe to store.
    func seal(_ text: String) throws -> String
    /// The text `sealed` seals; throws when it does not open (another device's, or edited).
    func open(_ sealed: String) throws -> String
}
