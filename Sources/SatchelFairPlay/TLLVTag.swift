import SatchelBytes

/// The 8-byte tag that starts every TLLV block of an SPC or CKC.
public struct TLLVTag: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible, Codable {
    /// The tag as a big-endian 64-bit number.
    public let rawValue: UInt64

    /// Wraps a raw tag value.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// Wraps a raw tag value.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    /// Sixteen lower-case hex digits, as Apple's tools print tags.
    public var description: String { Hex.encode(bytes) }

    /// The tag as 8 big-endian bytes.
    public var bytes: [UInt8] {
        var writer = ByteWriter(capacity: 8)
        writer.writeUInt64(rawValue)
        return writer.bytes
    }

    /// The name the programming guide gives this tag, or nil for a tag it does not define.
    public var name: String? { Self.names[self] }

    /// True for tags the FairPlay Streaming Programming Guide defines.
    public var isDefined: Bool { Self.names[self] != nil }

    public static func < (lhs: TLLVTag, rhs: TLLVTag) -> Bool { lhs.rawValue < rhs.rawValue }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let bytes = try? Hex.decode(text, count: 8) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "a TLLV tag is 16 hex digits"))
        }
        var reader = ByteReader(bytes)
        self.init(rawValue: (try? reader.readUInt64()) ?? 0)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    // MARK: SPC tags (guide Table 2-4, Table 7-2)

    /// [SK...R1]: session key and R1, encrypted with DASk.
    public static let sessionKeyR1 = TLLVTag(0x3d1a_10b8_bffa_c2ec)
    /// [SK...R1] integrity value.
    public static let sessionKeyR1Integrity = TLLVTag(0xb349_d480_9e91_0687)
    /// Anti-replay seed.
    public static let antiReplaySeed = TLLVTag(0x89c9_0f12_2041_06b2)
    /// R2, the input of the D function.
    public static let r2 = TLLVTag(0x71b5_595a_c152_1133)
    /// Tag return request: tags the CKC must return verbatim.
    public static let tagReturnRequest = TLLVTag(0x19f9_d4e5_ab76_09cb)
    /// Asset ID.
    public static let assetID = TLLVTag(0x1bf7_f53f_5d5d_5a1f)
    /// Transaction ID.
    public static let transactionID = TLLVTag(0x47aa_7ad3_4405_77de)
    /// Protocol versions supported by the device.
    public static let protocolVersionsSupported = TLLVTag(0x67b8_fb79_ecce_1a13)
    /// Protocol version used for this SPC.
    public static let protocolVersionUsed = TLLVTag(0x5d81_bcbc_c7f6_1703)
    /// Streaming indicator (the guide's table misprints it with an extra 'b').
    public static let streamingIndicator = TLLVTag(0xabb0_256a_3184_3974)
    /// Media playback state (creation date, state, session ID).
    public static let mediaPlaybackState = TLLVTag(0xeb8e_fdf2_b25a_b3a0)
    /// Client capabilities.
    public static let capabilities = TLLVTag(0x9c02_af32_53c0_7fb2)
    /// Sync TLLV of a Sync SPC (offline rentals).
    public static let sync = TLLVTag(0x7796_6de1_dc10_83ad)

    // MARK: CKC tags (guide Table 2-11, 5-3, 7-1, 2-12)

    /// Encrypted content key and content IV.
    public static let encryptedContentKey = TLLVTag(0x58b3_8165_af0e_3d5a)
    /// R1 returned to the device.
    public static let r1 = TLLVTag(0xea74_c464_5d5e_fee9)
    /// Content key duration (lease, rental, persistence).
    public static let contentKeyDuration = TLLVTag(0x47ac_f6a4_18cd_091a)
    /// HDCP enforcement.
    public static let hdcpEnforcement = TLLVTag(0x2e52_f153_0d8d_db4a)
    /// Offline key (dual expiry).
    public static let offlineKey = TLLVTag(0x6375_d972_7060_218c)

    private static let names: [TLLVTag: String] = [
        .sessionKeyR1: "[SK...R1]",
        .sessionKeyR1Integrity: "[SK...R1] integrity",
        .antiReplaySeed: "anti-replay seed",
        .r2: "R2",
        .tagReturnRequest: "tag return request",
        .assetID: "asset ID",
        .transactionID: "transaction ID",
        .protocolVersionsSupported: "protocol versions supported",
        .protocolVersionUsed: "protocol version used",
        .streamingIndicator: "streaming indicator",
        .mediaPlaybackState: "media playback state",
        .capabilities: "capabilities",
        .sync: "sync",
        .encryptedContentKey: "encrypted content key",
        .r1: "R1",
        .contentKeyDuration: "content key duration",
        .hdcpEnforcement: "HDCP enforcement",
        .offlineKey: "offline key",
    ]
}
