import SatchelBytes

/// Where the decrypted content will be shown (streaming indicator TLLV, guide Table 2-5).
public enum StreamingTarget: String, Sendable, Codable, CustomStringConvertible {
    /// Sent by AirPlay to an Apple TV.
    case airPlay = "airplay"
    /// Sent to an Apple digital AV adapter.
    case avAdapter = "av-adapter"
    /// Played on the requesting device.
    case device = "device"

    /// The indicator value for AirPlay.
    public static let airPlayValue: UInt64 = 0xabb0_256a_3184_3974
    /// The indicator value for an AV adapter.
    public static let avAdapterValue: UInt64 = 0x5f9c_8132_b59f_2fde

    /// Classifies a raw indicator value; any other value means the device itself.
    public init(indicator: UInt64) {
        switch indicator {
        case Self.airPlayValue: self = .airPlay
        case Self.avAdapterValue: self = .avAdapter
        default: self = .device
        }
    }

    /// The indicator value a device sends for this target.
    public var indicatorValue: UInt64 {
        switch self {
        case .airPlay: return Self.airPlayValue
        case .avAdapter: return Self.avAdapterValue
        case .device: return 0
        }
    }

    public var description: String { rawValue }
}

/// The device's playback state (guide Table 5-2).
public enum PlaybackState: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// State 1: ready to start playing; the CKC must carry a valid key.
    case readyToStart
    /// State 2: playing or paused; the CKC need not carry a usable key.
    case playingOrPaused
    /// State 3: playing and the lease is about to expire; the CKC must carry a valid key.
    case leaseExpiring
    /// A value the guide does not define; treated like state 1.
    case other(UInt32)

    private static let table: [(state: PlaybackState, value: UInt32, name: String)] = [
        (.readyToStart, 0xf4de_e5a2, "ready-to-start"), (.playingOrPaused, 0xa5d6_739e, "playing-or-paused"),
        (.leaseExpiring, 0x4f83_4330, "lease-expiring"),
    ]

    /// Classifies a raw state value.
    public init(rawValue: UInt32) {
        self = Self.table.first { $0.value == rawValue }?.state ?? .other(rawValue)
    }

    /// The raw value in the TLLV.
    public var rawValue: UInt32 {
        if case let .other(value) = self { return value }
        return Self.table.first { $0.state == self }?.value ?? 0
    }

    /// A short name for reports.
    public var description: String {
        Self.table.first { $0.state == self }?.name ?? "unknown-0x\(String(rawValue, radix: 16))"
    }
}

/// Media playback state TLLV (guide Table 5-1).
public struct MediaPlaybackState: Sendable, Equatable {
    /// Seconds since 1970 when the SPC was created.
    public var creationDate: UInt32
    /// The playback state.
    public var state: PlaybackState
    /// Identifies one playback session across bit rates and keys.
    public var sessionID: UInt64

    /// Creates a playback state value.
    public init(creationDate: UInt32, state: PlaybackState, sessionID: UInt64) {
        self.creationDate = creationDate
        self.state = state
        self.sessionID = sessionID
    }

    init(tllv: TLLV) throws(FairPlayError) {
        (creationDate, state, sessionID) = try tllv.decodeValue(needs: 16) { (reader) throws(ByteReaderError) in
            (try reader.readUInt32(), PlaybackState(rawValue: try reader.readUInt32()), try reader.readUInt64())
        }
    }

    var value: [UInt8] {
        var writer = ByteWriter(capacity: 16)
        writer.writeUInt32(creationDate)
        writer.writeUInt32(state.rawValue)
        writer.writeUInt64(sessionID)
        return writer.bytes
    }
}

/// Client capabilities TLLV (guide Table 2-14, 2-15): a 128-bit field.
public struct Capabilities: Sendable, Equatable {
    /// Bits 64-127.
    public var high: UInt64
    /// Bits 0-63.
    public var low: UInt64

    /// Bit 0: the client enforces the HDCP Enforcement TLLV.
    public static let hdcpEnforcementBit: UInt64 = 1 << 0
    /// Bit 1: the client handles the Offline Key TLLV.
    public static let offlineKeyBit: UInt64 = 1 << 1

    /// Creates a capability field from its two halves.
    public init(high: UInt64 = 0, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Creates a capability field from the two defined features.
    public init(hdcpEnforcement: Bool, offlineKey: Bool) {
        self.init(low: (hdcpEnforcement ? Self.hdcpEnforcementBit : 0) | (offlineKey ? Self.offlineKeyBit : 0))
    }

    /// The client enforces HDCP as the CKC asks.
    public var hdcpEnforcement: Bool { low & Self.hdcpEnforcementBit != 0 }
    /// The client can enforce the Offline Key TLLV (dual expiry).
    public var offlineKey: Bool { low & Self.offlineKeyBit != 0 }

    init(tllv: TLLV) throws(FairPlayError) {
        (high, low) = try tllv.decodeValue(needs: 16) { (reader) throws(ByteReaderError) in
            (try reader.readUInt64(), try reader.readUInt64())
        }
    }

    var value: [UInt8] {
        var writer = ByteWriter(capacity: 16)
        writer.writeUInt64(high)
        writer.writeUInt64(low)
        return writer.bytes
    }
}

/// Sync TLLV (guide Table 7-2): the remaining validity of an offline rental.
public struct SyncInfo: Sendable, Equatable {
    /// TLLV version; only 1 is valid.
    public var version: UInt32
    /// Reserved, 0.
    public var reserved: UInt32
    /// The content ID from the Offline Key TLLV (16 bytes).
    public var contentID: [UInt8]
    /// Seconds of validity left; 0 when expired, 0xFFFFFFFF when unlimited.
    public var durationToExpiry: UInt32

    /// The value meaning "no expiry".
    public static let unlimited: UInt32 = 0xFFFF_FFFF

    /// Creates a sync value.
    public init(version: UInt32 = 1, reserved: UInt32 = 0, contentID: [UInt8], durationToExpiry: UInt32) {
        self.version = version
        self.reserved = reserved
        self.contentID = contentID
        self.durationToExpiry = durationToExpiry
    }

    /// True for a valid Sync TLLV (version 1): the SPC is then a Sync SPC.
    public var isValid: Bool { version == 1 && contentID.count == 16 }

    init(tllv: TLLV) throws(FairPlayError) {
        (version, reserved, contentID, durationToExpiry) = try tllv.decodeValue(needs: 28) { (reader) throws(ByteReaderError) in
            (try reader.readUInt32(), try reader.readUInt32(), try reader.readBytes(16), try reader.readUInt32())
        }
    }

    var value: [UInt8] {
        var writer = ByteWriter(capacity: 28)
        writer.writeUInt32(version)
        writer.writeUInt32(reserved)
        writer.writeBytes(contentID)
        writer.writeUInt32(durationToExpiry)
        return writer.bytes
    }
}
