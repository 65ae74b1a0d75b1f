/// The DRM systems a package is signalled for: each system's ID (its `pssh` boxes and DASH `ContentProtection`
/// scheme), its HLS `KEYFORMAT`, and the name `satchel package --drm` knows it by.
public enum DRMSystem: String, Sendable, CaseIterable, Comparable {
    /// W3C Clear Key: the common `pssh` (version 1, key IDs only) and HLS `identity` keys.
    case clearKey = "clearkey"
    /// Google Widevine: a `WidevinePsshData` protobuf in a version-0 `pssh`.
    case widevine
    /// Microsoft PlayReady: a PlayReady Object in a version-0 `pssh` and in the MPD's `mspr:pro`.
    case playReady = "playready"
    /// Apple FairPlay Streaming: `skd://` key URIs in HLS (no `pssh`).
    case fairPlay = "fairplay"

    /// The system ID (ISO/IEC 23001-7 `SystemID`).
    public var systemID: [UInt8] {
        switch self {
        case .clearKey: return PSSH.commonSystemID
        case .widevine: return [0xed, 0xef, 0x8b, 0xa9, 0x79, 0xd6, 0x4a, 0xce, 0xa3, 0xc8, 0x27, 0xdc, 0xd5, 0x1d, 0x21, 0xed]
        case .playReady: return [0x9a, 0x04, 0xf0, 0x79, 0x98, 0x40, 0x42, 0x86, 0xab, 0x92, 0xe6, 0x5b, 0xe0, 0x88, 0x5f, 0x95]
        case .fairPlay: return [0x94, 0xce, 0x86, 0xfb, 0x07, 0xff, 0x4f, 0x43, 0xad, 0xb8, 0x93, 0xd2, 0xfa, 0x96, 0x8c, 0xa2]
        }
    }

    /// The system ID as a lower-case UUID ("edef8ba9-79d6-4ace-a3c8-27dcd51d21ed").
    public var uuid: String { (try? KeyID(systemID).uuidString) ?? "" }  // 16 bytes, written the way key IDs are

    /// The DASH `ContentProtection@schemeIdUri`.
    public var dashSchemeIDURI: String { "urn:uuid:" + uuid }

    /// The HLS `EXT-X-KEY` `KEYFORMAT`.
    public var hlsKeyFormat: String {
        switch self {
        case .clearKey: return "identity"
        case .widevine: return "urn:uuid:" + uuid
        case .playReady: return "com.microsoft.playready"
        case .fairPlay: return "com.apple.streamingkeydelivery"
        }
    }

    /// The system a `pssh` box's system ID names, nil for one Satchel does not know.
    public init?(systemID: [UInt8]) {
        guard let system = Self.allCases.first(where: { $0.systemID == systemID }) else { return nil }
        self = system
    }

    /// The system an HLS `KEYFORMAT` names (none written means `identity`), nil for one Satchel does not know.
    public init?(hlsKeyFormat: String?) {
        let format = hlsKeyFormat ?? "identity"
        guard let system = Self.allCases.first(where: { $0.hlsKeyFormat.lowercased() == format.lowercased() }) else { return nil }
        self = system
    }

    /// The order packagers write them in: Clear Key's common box first, then PlayReady, Widevine, FairPlay.
    public static func < (lhs: DRMSystem, rhs: DRMSystem) -> Bool {
        let order: [DRMSystem] = [.clearKey, .playReady, .widevine, .fairPlay]
        return (order.firstIndex(of: lhs) ?? 0) < (order.firstIndex(of: rhs) ?? 0)
    }
}
