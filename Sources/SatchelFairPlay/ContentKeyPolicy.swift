import SatchelBytes

/// The key type of a content key duration TLLV (guide Tables 5-4 and 6-1).
public enum KeyType: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// Valid for the lease only.
    case leaseOnly
    /// Valid for the rental only.
    case rentalOnly
    /// Valid for both lease and rental.
    case leaseAndRental
    /// May be persisted with unlimited validity.
    case persistableUnlimited
    /// May be persisted; validity limited to the rental duration.
    case persistableLimited
    /// A value the guide does not define.
    case other(UInt32)

    private static let table: [(type: KeyType, value: UInt32, name: String)] = [
        (.leaseOnly, 0x1a4b_de7e, "lease"), (.rentalOnly, 0x3dfe_45a0, "rental"),
        (.leaseAndRental, 0x27b5_9bde, "lease-and-rental"), (.persistableUnlimited, 0x3df2_d9fb, "persistable"),
        (.persistableLimited, 0x18f0_6048, "persistable-limited"),
    ]

    /// Classifies a raw key type.
    public init(rawValue: UInt32) {
        self = Self.table.first { $0.value == rawValue }?.type ?? .other(rawValue)
    }

    /// The raw value in the TLLV.
    public var rawValue: UInt32 {
        if case let .other(value) = self { return value }
        return Self.table.first { $0.type == self }?.value ?? 0
    }

    /// A short name for reports.
    public var description: String {
        Self.table.first { $0.type == self }?.name ?? "unknown-0x\(String(rawValue, radix: 16))"
    }
}

/// Content key duration TLLV (guide Table 5-3).
public struct ContentKeyDuration: Sendable, Equatable {
    /// Lease duration in seconds.
    public var leaseSeconds: UInt32
    /// Rental duration in seconds (for a limited persistable key: its validity).
    public var rentalSeconds: UInt32
    /// The key type.
    public var keyType: KeyType
    /// The reserved field, fixed by the guide.
    public var reserved: UInt32

    /// The fixed value of the reserved field.
    public static let reservedValue: UInt32 = 0x86d3_4a3a

    /// Creates a duration with an explicit key type.
    public init(leaseSeconds: UInt32 = 0, rentalSeconds: UInt32 = 0, keyType: KeyType, reserved: UInt32 = reservedValue) {
        self.leaseSeconds = leaseSeconds
        self.rentalSeconds = rentalSeconds
        self.keyType = keyType
        self.reserved = reserved
    }

    /// A lease of `seconds`.
    public static func lease(_ seconds: UInt32) -> Self { Self(leaseSeconds: seconds, keyType: .leaseOnly) }
    /// A rental of `seconds`.
    public static func rental(_ seconds: UInt32) -> Self { Self(rentalSeconds: seconds, keyType: .rentalOnly) }
    /// A lease and a rental together.
    public static func leaseAndRental(lease: UInt32, rental: UInt32) -> Self {
        Self(leaseSeconds: lease, rentalSeconds: rental, keyType: .leaseAndRental)
    }
    /// A persistable key, unlimited when `seconds` is nil, otherwise valid for `seconds`.
    public static func persistable(seconds: UInt32? = nil) -> Self {
        guard let seconds else { return Self(keyType: .persistableUnlimited) }
        return Self(rentalSeconds: seconds, keyType: .persistableLimited)
    }

    /// The duration that lease and rental options describe; nil when none is set.
    public static func from(leaseSeconds: UInt32?, rentalSeconds: UInt32?, persist: Bool, persistSeconds: UInt32?) -> Self? {
        if persist {
            var duration = persistable(seconds: persistSeconds)
            duration.leaseSeconds = leaseSeconds ?? 0
            return duration
        }
        switch (leaseSeconds, rentalSeconds) {
        case let (lease?, rental?): return .leaseAndRental(lease: lease, rental: rental)
        case let (lease?, nil): return .lease(lease)
        case let (nil, rental?): return .rental(rental)
        case (nil, nil): return nil
        }
    }

    init(tllv: TLLV) throws(FairPlayError) {
        (leaseSeconds, rentalSeconds, keyType, reserved) = try tllv.decodeValue(needs: 16) { (reader) throws(ByteReaderError) in
            (try reader.readUInt32(), try reader.readUInt32(), KeyType(rawValue: try reader.readUInt32()), try reader.readUInt32())
        }
    }

    var value: [UInt8] {
        var writer = ByteWriter(capacity: 16)
        writer.writeUInt32(leaseSeconds)
        writer.writeUInt32(rentalSeconds)
        writer.writeUInt32(keyType.rawValue)
        writer.writeUInt32(reserved)
        return writer.bytes
    }
}

/// HDCP enforcement TLLV values (guide Table 2-12). Without the TLLV a device enforces type 0.
public enum HDCPRequirement: String, Sendable, Equatable, CaseIterable, Codable, CustomStringConvertible {
    /// HDCP not required.
    case none
    /// HDCP type 0 required.
    case type0
    /// HDCP type 1 required.
    case type1

    /// The 8-byte value in the TLLV.
    public var rawValue64: UInt64 {
        switch self {
        case .none: return 0xEF72_894C_A789_5B78
        case .type0: return 0x4079_1AC7_8BD5_C571
        case .type1: return 0x285A_0863_BBA8_E1D3
        }
    }

    /// Classifies a TLLV value; nil for an undefined value.
    public init?(rawValue64: UInt64) {
        guard let match = Self.allCases.first(where: { $0.rawValue64 == rawValue64 }) else { return nil }
        self = match
    }

    public var description: String { rawValue }
}

/// Offline Key TLLV (guide Table 7-1): dual expiry for offline rentals.
public struct OfflineKeyPolicy: Sendable, Equatable {
    /// TLLV version (1).
    public var version: UInt32
    /// Reserved, 0.
    public var reserved: UInt32
    /// The server's 16-byte content ID, echoed later in Sync SPCs.
    public var contentID: [UInt8]
    /// Validity before first playback, from license acquisition; 0 = unlimited.
    public var storageSeconds: UInt32
    /// Validity after first playback; 0 = unlimited.
    public var playbackSeconds: UInt32

    /// Creates an offline key policy; the content ID must be 16 bytes.
    public init(contentID: [UInt8], storageSeconds: UInt32, playbackSeconds: UInt32, version: UInt32 = 1, reserved: UInt32 = 0) throws(FairPlayError) {
        guard contentID.count == 16 else { throw .invalidLength(what: "offline content ID", expected: 16, actual: contentID.count) }
        self.version = version
        self.reserved = reserved
        self.contentID = contentID
        self.storageSeconds = storageSeconds
        self.playbackSeconds = playbackSeconds
    }

    init(tllv: TLLV) throws(FairPlayError) {
        (version, reserved, contentID, storageSeconds, playbackSeconds) = try tllv.decodeValue(needs: 32) { (reader) throws(ByteReaderError) in
            (try reader.readUInt32(), try reader.readUInt32(), try reader.readBytes(16), try reader.readUInt32(), try reader.readUInt32())
        }
    }

    var value: [UInt8] {
        var writer = ByteWriter(capacity: 32)
        writer.writeUInt32(version)
        writer.writeUInt32(reserved)
        writer.writeBytes(contentID)
        writer.writeUInt32(storageSeconds)
        writer.writeUInt32(playbackSeconds)
        return writer.bytes
    }
}

/// Which streaming targets a policy allows (the AirPlay / AV adapter hook).
public struct StreamingPermissions: Sendable, Equatable {
    /// Allow content sent by AirPlay to an Apple TV.
    public var airPlay: Bool
    /// Allow content sent to an Apple digital AV adapter.
    public var avAdapter: Bool

    /// Creates permissions; both are allowed by default, as on Apple's own KSM.
    public init(airPlay: Bool = true, avAdapter: Bool = true) {
        self.airPlay = airPlay
        self.avAdapter = avAdapter
    }

    /// True when `target` may receive the key.
    public func allows(_ target: StreamingTarget) -> Bool {
        switch target {
        case .airPlay: return airPlay
        case .avAdapter: return avAdapter
        case .device: return true
        }
    }
}

/// What the KSM puts into a CKC for one SPC: the key, its IV and the rights attached.
public struct ContentKeyPolicy: Sendable {
    /// The 16-byte content key.
    public var contentKey: SecretBytes
    /// The 16-byte content IV.
    public var contentIV: [UInt8]
    /// Lease / rental / persistence; sent only when the SPC has a media playback state.
    public var duration: ContentKeyDuration?
    /// HDCP requirement; nil sends no TLLV (the device then enforces type 0).
    public var hdcp: HDCPRequirement?
    /// Dual expiry; never together with ``duration``.
    public var offlineKey: OfflineKeyPolicy?
    /// Streaming targets allowed.
    public var streaming: StreamingPermissions
    /// Answer SPCs in playback state 2 (playing or paused) without the real key.
    public var withholdKeyWhilePlaying: Bool

    /// Creates a policy; key and IV must be 16 bytes.
    public init(contentKey: SecretBytes, contentIV: [UInt8], duration: ContentKeyDuration? = nil,
                hdcp: HDCPRequirement? = nil, offlineKey: OfflineKeyPolicy? = nil,
                streaming: StreamingPermissions = StreamingPermissions(), withholdKeyWhilePlaying: Bool = false) throws(FairPlayError) {
        guard contentKey.count == 16 else { throw .invalidLength(what: "content key", expected: 16, actual: contentKey.count) }
        guard contentIV.count == 16 else { throw .invalidLength(what: "content IV", expected: 16, actual: contentIV.count) }
        if duration != nil && offlineKey != nil {
            throw .policyConflict("an Offline Key TLLV cannot be sent with a Content Key Duration TLLV")
        }
        self.contentKey = contentKey
        self.contentIV = contentIV
        self.duration = duration
        self.hdcp = hdcp
        self.offlineKey = offlineKey
        self.streaming = streaming
        self.withholdKeyWhilePlaying = withholdKeyWhilePlaying
    }
}
