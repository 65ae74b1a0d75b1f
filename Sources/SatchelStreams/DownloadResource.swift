import Foundation

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

    private enum CodingKeys: String, CodingKey {
        case url, localPath, range, kind, duration, group, expectedSize, permittedMimeTypes
    }

    /// Stored as one JSON array, `[url, localPath, kind, duration, group, expectedSize, offset, length,
    /// permittedMimeTypes]` (null where absent): an asset may have 200,000 of them, and arrays encode and
    /// decode several times faster than keyed objects. Rows written as objects by earlier versions still decode.
    public func encode(to encoder: any Encoder) throws {
        var row = encoder.unkeyedContainer()
        try row.encode(url)
        try row.encode(localPath)
        try row.encode(kind)
        try row.encode(duration)
        try row.encode(group)
        try row.encode(expectedSize == range?.length ? nil : expectedSize)
        try row.encode(range?.offset)
        try row.encode(range?.length)
        try row.encode(permittedMimeTypes)
    }

    public init(from decoder: any Decoder) throws {
        guard var row = try? decoder.unkeyedContainer() else {
            let keyed = try decoder.container(keyedBy: CodingKeys.self)
            self.init(url: try keyed.decode(String.self, forKey: .url), localPath: try keyed.decode(String.self, forKey: .localPath),
                      range: try keyed.decodeIfPresent(ByteRange.self, forKey: .range), kind: try keyed.decode(Kind.self, forKey: .kind),
                      duration: try keyed.decodeIfPresent(Double.self, forKey: .duration), group: try keyed.decodeIfPresent(String.self, forKey: .group),
                      expectedSize: try keyed.decodeIfPresent(Int.self, forKey: .expectedSize),
                      permittedMimeTypes: try keyed.decodeIfPresent([String].self, forKey: .permittedMimeTypes))
            return
        }
        let url = try row.decode(String.self), localPath = try row.decode(String.self), kind = try row.decode(Kind.self)
        let duration = try row.decode(Double?.self), group = try row.decode(String?.self), expectedSize = try row.decode(Int?.self)
        let offset = try row.decode(Int?.self), length = try row.decode(Int?.self), permitted = try row.decode([String]?.self)
        let range = offset.flatMap { offset in length.map { ByteRange(offset: offset, length: $0) } }
        self.init(url: url, localPath: localPath, range: range, kind: kind, duration: duration, group: group, expectedSize: expectedSize,
                  permittedMimeTypes: permitted)
    }

    /// A byte range.
    public struct ByteRange: Sendable, Codable, Hashable {
        /// Its first byte.
        public var offset: Int
        /// Its length in bytes.
        public var length: Int

        /// Creates a range.
        public init(offset: Int, length: Int) {
            self.offset = offset
            self.length = length
        }

        /// Largest offset or end accepted (2^53: exact in a Double, far beyond any real file).
        public static let maxEnd = 1 << 53

        /// A checked range: offset and length not negative, the end within ``maxEnd``; nil otherwise.
        public init?(checkedOffset offset: Int, length: Int) {
            guard offset >= 0, length >= 0, offset <= Self.maxEnd, length <= Self.maxEnd - offset else { return nil }
            self.init(offset: offset, length: length)
        }

        /// A range written `first-last` (inclusive, as DASH's mediaRange and HTTP's Range), checked.
        public init?(inclusive text: String) {
            let bounds = text.split(separator: "-", omittingEmptySubsequences: false)
            guard bounds.count == 2, let first = Int(bounds[0]), let last = Int(bounds[1]), first >= 0, last >= first,
                  last < Self.maxEnd else { return nil }
            self.init(checkedOffset: first, length: last - first + 1)
        }
    }
}
