/// How an HLS key tag (`METHOD=`) protects its segments, read once where the tag is: the one decision every later
/// step (the route, the content's report, the decryptor) takes from.
public enum EncryptionMethod: Sendable, Hashable {
    /// `AES-128`: whole segments, AES-128-CBC.
    case aes128
    /// `SAMPLE-AES`: MPEG-TS samples with their own pattern, or, with an init segment, CMAF `cbcs`.
    case sampleAES
    /// `SAMPLE-AES-CTR` (and `SAMPLE-AES-CENC`, its older spelling): CMAF `cenc`.
    case sampleAESCTR
    /// Any other method, as written (upper case): not one the proxy decrypts.
    case other(String)

    /// The method a tag's `METHOD` value names (case aside).
    public init(tag value: String) {
        switch value.uppercased() {
        case "AES-128": self = .aes128
        case "SAMPLE-AES": self = .sampleAES
        case "SAMPLE-AES-CTR", "SAMPLE-AES-CENC": self = .sampleAESCTR
        case let other: self = .other(other)
        }
    }

    /// The method as a key tag writes it.
    public var tag: String {
        switch self {
        case .aes128: "AES-128"
        case .sampleAES: "SAMPLE-AES"
        case .sampleAESCTR: "SAMPLE-AES-CTR"
        case let .other(value): value
        }
    }

    /// The scheme as the proxy reports it (`aes-128`, `sample-aes`, `cenc`, or the method in lower case).
    public var scheme: String {
        switch self {
        case .aes128: "aes-128"
        case .sampleAES: "sample-aes"
        case .sampleAESCTR: "cenc"
        case let .other(value): value.lowercased()
        }
    }
}
