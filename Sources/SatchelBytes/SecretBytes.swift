/// Bytes that must never be printed, logged or put into an error message:
/// content keys, session keys, application secrets.
///
/// `description` is redacted, equality is constant-time, and the bytes are only
/// reachable through ``bytes`` so that every use is visible in review.
public struct SecretBytes: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The secret itself. Do not print it.
    public let bytes: [UInt8]

    /// Wraps `bytes` as a secret.
    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Decodes a hex secret of exactly `count` bytes; the error never echoes the input.
    public init(hex: String, count: Int) throws(HexError) {
        self.bytes = try Hex.decode(hex, count: count)
    }

    /// A fresh random secret of `count` bytes.
    public static func random(_ count: Int) -> SecretBytes { SecretBytes(SecureRandom.bytes(count)) }

    /// The length in bytes (not secret).
    public var count: Int { bytes.count }

    public var description: String { "<secret: \(bytes.count) bytes>" }
    public var debugDescription: String { description }

    public static func == (lhs: SecretBytes, rhs: SecretBytes) -> Bool {
        ConstantTime.equals(lhs.bytes, rhs.bytes)
    }
}
