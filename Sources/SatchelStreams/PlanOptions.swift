/// What a planner picks from an adaptive stream, and how much of it it accepts.
public struct PlanOptions: Sendable, Equatable {
    /// HLS: the variant with the highest BANDWIDTH not above this (the lowest when none is); 0 = the lowest; nil = the highest.
    public var maxBitrate: Int?
    /// DASH / Smooth: highest video bitrate allowed.
    public var maxVideoBitrate: Int?
    /// DASH / Smooth: highest audio bitrate allowed.
    public var maxAudioBitrate: Int?
    /// Audio and subtitle languages wanted besides the default renditions (prefixes: `fr` takes `fr-CA`; `*` takes every
    /// language).
    public var languages: [String]
    /// Plan AES-128 key files too (otherwise keys are left to the license layer).
    public var includeEncryptionKeys: Bool
    /// MIME types a single file may have; nil = ``MIMEType/defaultPermitted``; an empty list = no check.
    public var permittedMimeTypes: [String]?
    /// The most files one asset may have; a manifest that lists more is refused.
    public var resourceLimit: Int

    /// The default cap on an asset's files: far above a real VOD asset (24 h of 2 s segments is 43,200 per
    /// track, so 129,600 for video, audio and subtitles) and small enough that an index stays quick.
    public static let defaultMaxResources = 200_000

    /// Creates options.
    public init(maxBitrate: Int? = nil, maxVideoBitrate: Int? = nil, maxAudioBitrate: Int? = nil, languages: [String] = [],
                includeEncryptionKeys: Bool = false, permittedMimeTypes: [String]? = nil, resourceLimit: Int = PlanOptions.defaultMaxResources) {
        self.maxBitrate = maxBitrate
        self.maxVideoBitrate = maxVideoBitrate
        self.maxAudioBitrate = maxAudioBitrate
        self.languages = languages
        self.includeEncryptionKeys = includeEncryptionKeys
        self.permittedMimeTypes = permittedMimeTypes
        self.resourceLimit = max(resourceLimit, 1)
    }
}
