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

    /// Creates options.
    public init(maxBitrate: Int? = nil, maxVideoBitrate: Int? = nil, maxAudioBitrate: Int? = nil, languages: [String] = [],
                includeEncryptionKeys: Bool = false) {
        self.maxBitrate = maxBitrate
        self.maxVideoBitrate = maxVideoBitrate
        self.maxAudioBitrate = maxAudioBitrate
        self.languages = languages
        self.includeEncryptionKeys = includeEncryptionKeys
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
