import Foundation
import SatchelBytes
import SatchelFairPlay
import SatchelMedia
import SatchelProtection

/// The output layout.
public enum PackageFormat: String, Sendable, CaseIterable {
    /// MPEG-TS segments with HLS playlists.
    case hlsTS = "hls-ts"
    /// Fragmented MP4 (CMAF) with HLS playlists and a DASH MPD.
    case cmaf
    /// Smooth Streaming: PIFF fragments with a client manifest (`Manifest`, the PlayReady header for `cenc`) and a
    /// server manifest (`manifest.ism`).
    case smooth
}

/// The protection scheme.
public enum PackageScheme: String, Sendable, CaseIterable {
    case clear
    /// Whole-segment AES-128-CBC (hls-ts).
    case aes128 = "aes-128"
    /// Apple SAMPLE-AES in MPEG-TS (hls-ts), FairPlay or identity keys.
    case sampleAES = "sample-aes"
    /// CENC cbcs (cmaf).
    case cbcs
    /// CENC cenc (cmaf).
    case cenc
}

/// What `satchel package` is asked to do.
public struct PackageOptions: Sendable {
    /// Input media files (each a rendition; audio-only files form the audio group).
    public var inputs: [String]
    /// The output directory (replaced atomically).
    public var output: String
    /// Output format.
    public var format: PackageFormat
    /// Protection scheme.
    public var scheme: PackageScheme
    /// The key; generated with the secure generator when nil.
    public var key: ContentKey?
    /// Key URI for identity / AES-128 key tags; `{kid}` is replaced by the key ID in hex.
    public var keyURI: String?
    /// FairPlay key URI (skd://…); `{kid}` is replaced by the key ID in hex.
    public var fairPlayURI: String?
    /// Target segment duration in seconds.
    public var segmentDuration: Double
    /// Rotate to a new key every N segments (hls-ts); nil = one key for the asset.
    public var keyRotationSegments: Int?
    /// Seconds at the start left in the clear (a clear lead: playback starts before the license arrives); every
    /// segment that starts before it is written clear, the key tags appearing at the first protected one.
    public var clearLead: Double = 0
    /// Where the keys of a protected package are written (mode 0600), outside the package folder so that an origin
    /// publishing the folder never holds them; nil writes no key file (the keys are in ``PackageSummary/keys`` only).
    /// Defaults to ``defaultKeyFile(for:)``.
    public var keyFile: String?
    /// The DRM systems the package is signalled for; nil: Clear Key (`identity`), or FairPlay alone when
    /// ``fairPlayURI`` is set without ``keyURI`` (FairPlay and Clear Key with both).
    public var drm: Set<DRMSystem>?
    /// PlayReady's license acquisition URL (`LA_URL` in its header), when the package names one.
    public var playReadyLicenseURL: String?
    /// Widevine's `provider`, when the license service wants one.
    public var widevineProvider: String?
    /// Widevine's `content_id` (as UTF-8), when given.
    public var contentID: String?
    /// Each system's `pssh` box as its key service made it (from a CPIX document), written instead of Satchel's own.
    public var psshBoxes: [DRMSystem: [UInt8]] = [:]
    /// The FairPlay protocol versions the key server supports, for `KEYFORMATVERSIONS` ("1", "1/2").
    public var fairPlayVersions: [UInt32] = KeySecurityModule.Configuration.defaultSupportedVersions

    /// The systems signalled, in the order packagers write them (``drm``, or its default).
    public var drmSystems: [DRMSystem] {
        guard scheme != .clear else { return [] }
        if format == .smooth { return [.playReady] }  // a Smooth manifest signals PlayReady alone
        if let drm { return drm.sorted() }
        guard fairPlayURI != nil else { return [.clearKey] }
        return keyURI == nil ? [.fairPlay] : [.clearKey, .fairPlay]
    }

    /// The default key URI: the `satchel serve` key endpoint for the key ID.
    public static let defaultKeyURI = "/keys/{kid}"

    /// The key file beside a package folder: `pkg/movie` → `pkg/movie.keys.json`.
    public static func defaultKeyFile(for output: String) -> String {
        URL(fileURLWithPath: output).standardizedFileURL.path + ".keys.json"
    }

    /// Creates options; the key file is ``defaultKeyFile(for:)`` (set ``keyFile`` to change it).
    public init(inputs: [String], output: String, format: PackageFormat, scheme: PackageScheme, key: ContentKey? = nil,
                keyURI: String? = nil, fairPlayURI: String? = nil, segmentDuration: Double = 6, keyRotationSegments: Int? = nil) {
        self.inputs = inputs
        self.output = output
        self.format = format
        self.scheme = scheme
        self.key = key
        self.keyURI = keyURI
        self.fairPlayURI = fairPlayURI
        self.segmentDuration = segmentDuration
        self.keyRotationSegments = keyRotationSegments
        self.keyFile = Self.defaultKeyFile(for: output)
    }

    /// Checks the combination of options.
    public func validate() throws(PackagerError) {
        guard !inputs.isEmpty else { throw .invalidOptions("give at least one input file") }
        guard segmentDuration >= 1, segmentDuration <= 60 else { throw .invalidOptions("--segment-duration must be between 1 and 60 seconds") }
        switch (format, scheme) {
        case (.hlsTS, .cbcs), (.hlsTS, .cenc):
            throw .invalidOptions("--scheme \(scheme.rawValue) needs --format cmaf")
        case (.cmaf, .aes128), (.cmaf, .sampleAES):
            throw .invalidOptions("--scheme \(scheme.rawValue) needs --format hls-ts")
        case (.smooth, .aes128), (.smooth, .sampleAES), (.smooth, .cbcs):
            throw .invalidOptions("--format smooth takes --scheme clear or cenc (PIFF 1.1 is AES-CTR)")
        default: break
        }
        if let fairPlayURI, !fairPlayURI.hasPrefix("skd://") { throw .invalidOptions("--fairplay-uri must start with skd://") }
        for (option, uri) in [("--key-uri", keyURI), ("--fairplay-uri", fairPlayURI)] {
            if let uri, !HLSKey.isWritableURI(uri) {
                throw .invalidOptions("\(option) holds a double quote or a control character, which a playlist cannot carry: percent-encode them")
            }
        }
        try validateSignalling()
        if let keyFile {
            let folder = URL(fileURLWithPath: output).standardizedFileURL.path
            let file = URL(fileURLWithPath: keyFile).standardizedFileURL.path
            if file == folder || file.hasPrefix(folder + "/") {
                throw .invalidOptions("the key file must be outside the package folder, where no origin publishes it")
            }
        }
        if clearLead != 0 {
            guard clearLead > 0, clearLead <= 3_600 else { throw .invalidOptions("--clear-lead is between 0 and 3600 seconds") }
            guard scheme != .clear else { throw .invalidOptions("--clear-lead needs a protected --scheme") }
            guard format != .smooth else { throw .invalidOptions("--clear-lead is for --format cmaf and hls-ts; Smooth Streaming has no clear lead") }
        }
        if let rotation = keyRotationSegments {
            guard rotation >= 1 else { throw .invalidOptions("--key-rotation must be at least 1 segment") }
            guard format == .hlsTS, scheme == .aes128 || scheme == .sampleAES else {
                throw .invalidOptions("key rotation is supported for hls-ts with aes-128 or sample-aes")
            }
        }
    }
}

extension PackageOptions {
    /// Checks the DRM systems against the format and scheme, and their own settings (``validate()`` does too).
    public func validateSignalling() throws(PackagerError) {
        if let drm {
            guard !drm.isEmpty else { throw .invalidOptions("--drm needs at least one of \(DRMSystem.allCases.map(\.rawValue).joined(separator: ", "))") }
            guard scheme != .clear else { throw .invalidOptions("--drm needs a protected --scheme") }
            if fairPlayURI != nil && !drm.contains(.fairPlay) { throw .invalidOptions("--fairplay-uri goes with --drm fairplay") }
        }
        if drm == nil, fairPlayURI != nil, scheme != .sampleAES, scheme != .cbcs {
            throw .invalidOptions("--fairplay-uri goes with --scheme sample-aes or cbcs")
        }
        if format == .smooth, let drm, drm != [.playReady] {
            throw .invalidOptions("a Smooth Streaming package signals PlayReady alone: give --drm playready, or none")
        }
        let systems = Set(drmSystems)
        for system in [DRMSystem.widevine, .playReady] where systems.contains(system) && format != .smooth {
            guard format == .cmaf, scheme == .cenc || scheme == .cbcs else {
                throw .invalidOptions("--drm \(system.rawValue) needs --format cmaf with --scheme cenc or cbcs")
            }
        }
        if systems.contains(.fairPlay) {
            guard scheme == .sampleAES || scheme == .cbcs else { throw .invalidOptions("--drm fairplay needs --scheme sample-aes or cbcs") }
            guard fairPlayURI != nil else { throw .invalidOptions("--drm fairplay needs a FairPlay key URI (--fairplay-uri skd://…)") }
            guard !fairPlayVersions.isEmpty, fairPlayVersions.allSatisfy({ $0 >= 1 }) else {
                throw .invalidOptions("--fairplay-versions lists versions 1 and up, such as 1 or 1/2")
            }
        }
        if let url = playReadyLicenseURL {
            guard systems.contains(.playReady) else { throw .invalidOptions("--playready-license-url goes with --drm playready") }
            guard url.count <= PlayReadyHeader.licenseURLLimit, let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme?.lowercased() ?? ""),
                  parsed.host != nil else {
                throw .invalidOptions("--playready-license-url must be an http or https URL of at most \(PlayReadyHeader.licenseURLLimit) characters")
            }
        }
        if widevineProvider != nil || contentID != nil {
            guard systems.contains(.widevine) else { throw .invalidOptions("--widevine-provider and --content-id go with --drm widevine") }
            guard (widevineProvider?.utf8.count ?? 0) <= 255, (contentID?.utf8.count ?? 0) <= 255 else {
                throw .invalidOptions("--widevine-provider and --content-id are at most 255 bytes each")
            }
        }
    }
}
