import SatchelBytes

/// A content key opened for playback (only while the rights are valid). Never print `key`.
public struct PlaybackKey: Sendable, Equatable {
    /// The key ID, hex.
    public var keyID: String
    /// The key.
    public var key: SecretBytes
    /// The content IV, if the license carries one.
    public var iv: [UInt8]?

    /// A key with its ID (hex) and IV.
    public init(keyID: String, key: SecretBytes, iv: [UInt8]? = nil) {
        self.keyID = keyID
        self.key = key
        self.iv = iv
    }
}
