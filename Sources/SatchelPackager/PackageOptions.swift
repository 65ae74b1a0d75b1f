import Foundation
import SatchelBytes
import SatchelProtection

/// The output layout.
public enum PackageFormat: String, Sendable, CaseIterable {
    /// MPEG-TS segments with HLS playlists.
    case hlsTS = "hls-ts"
    /// Fragmented MP4 (CMAF) with HLS playlists and a DASH MPD.
    case cmaf
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
    /// Where the keys of a protected package are written (mode 0600), outside the package folder so that an origin
    /// publishing the folder never holds them; nil writes no key file (the keys are in ``PackageSummary/keys`` only).
    /// Defaults to ``defaultKeyFile(for:)``.
    public var keyFile: String?

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
        default: break
        }
        if let fairPlayURI, !fairPlayURI.hasPrefix("skd://") { throw .invalidOptions("--fairplay-uri must start with skd://") }
        if fairPlayURI != nil && ![.sampleAES, .cbcs].contains(scheme) {
            throw .invalidOptions("--fairplay-uri goes with --scheme sample-aes or cbcs")
        }
        if let keyFile {
            let folder = URL(fileURLWithPath: output).standardizedFileURL.path
            let file = URL(fileURLWithPath: keyFile).standardizedFileURL.path
            if file == folder || file.hasPrefix(folder + "/") {
                throw .invalidOptions("the key file must be outside the package folder, where no origin publishes it")
            }
        }
        if let rotation = keyRotationSegments {
            guard rotation >= 1 else { throw .invalidOptions("--key-rotation must be at least 1 segment") }
            guard format == .hlsTS, scheme == .aes128 || scheme == .sampleAES else {
                throw .invalidOptions("key rotation is supported for hls-ts with aes-128 or sample-aes")
            }
        }
    }
}
