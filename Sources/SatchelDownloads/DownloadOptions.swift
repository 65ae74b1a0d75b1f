/// What to download of an adaptive stream.
public struct DownloadOptions: Sendable, Codable, Equatable {
    /// HLS: the variant with the highest BANDWIDTH not above this (the lowest when none is); 0 = the lowest; nil = the highest.
    public var maxBitrate: Int?
    /// DASH / Smooth: highest video bitrate allowed.
    public var maxVideoBitrate: Int?
    /// DASH / Smooth: highest audio bitrate allowed.
    public var maxAudioBitrate: Int?
    /// Audio and subtitle languages wanted besides the DEFAULT=YES renditions.
    public var languages: [String]
    /// Download AES-128 key files too (otherwise keys are left to the license layer).
    public var includeEncryptionKeys: Bool
    /// MIME types a single-file download may have (`video/*` style wildcards allowed); nil = ``MIMEType/defaultPermitted``.
    /// Any other type is a fatal error.
    public var permittedMimeTypes: [String]?

    /// Creates options.
    public init(maxBitrate: Int? = nil, maxVideoBitrate: Int? = nil, maxAudioBitrate: Int? = nil, languages: [String] = [],
                includeEncryptionKeys: Bool = false, permittedMimeTypes: [String]? = nil) {
        self.maxBitrate = maxBitrate
        self.maxVideoBitrate = maxVideoBitrate
        self.maxAudioBitrate = maxAudioBitrate
        self.languages = languages
        self.includeEncryptionKeys = includeEncryptionKeys
        self.permittedMimeTypes = permittedMimeTypes
    }
}

/// One file to fetch for an asset.
public struct DownloadResource: Sendable, Codable, Hashable {
    /// What the file is.
    public enum Kind: String, Sendable, Codable {
        case manifest, initialization, segment, key, file
    }

    /// Absolute URL on the origin.
    public var url: String
    /// Path inside the asset's directory, relative to the manifest's location on the origin.
    public var localPath: String
    /// Byte range on the origin (offset, length), when only part of `url` is needed.
    public var range: ByteRange?
    /// What the file is.
    public var kind: Kind
    /// Media duration the file carries (segments), for cached-duration reporting.
    public var duration: Double?
    /// The track (media playlist, representation or quality level) a segment belongs to; cached duration is
    /// counted per track and the smallest wins.
    public var group: String?
    /// The size the origin announced before the download (a byte range's length, a HEAD's Content-Length), if known.
    public var expectedSize: Int?
    /// MIME types this file may have (single files); nil = any media type.
    public var permittedMimeTypes: [String]?

    /// Creates a resource.
    public init(url: String, localPath: String, range: ByteRange? = nil, kind: Kind, duration: Double? = nil, group: String? = nil,
                expectedSize: Int? = nil, permittedMimeTypes: [String]? = nil) {
        self.url = url
        self.localPath = localPath
        self.range = range
        self.kind = kind
        self.duration = duration
        self.group = group
        self.expectedSize = expectedSize ?? range?.length
        self.permittedMimeTypes = permittedMimeTypes
    }

    /// A byte range.
    public struct ByteRange: Sendable, Codable, Hashable {
        public var offset: Int
        public var length: Int

        /// Creates a range.
        public init(offset: Int, length: Int) {
            self.offset = offset
            self.length = length
        }
    }
}
