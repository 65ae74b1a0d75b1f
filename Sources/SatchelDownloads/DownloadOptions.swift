import Foundation
import SatchelBytes

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
    /// MIME types a single-file download may have (`video/*` style wildcards allowed); nil = ``MIMEType/defaultPermitted``;
    /// an empty list = no check.
    /// Any other type is a fatal error.
    public var permittedMimeTypes: [String]?
    /// Headers sent with every request for the asset (manifests, media, keys): a token or a cookie the origin
    /// or key server wants. Never logged and never part of an error message.
    public var headers: [String: String]?
    /// The most files one asset may have (segments of every track, init segments, keys); a manifest that
    /// lists more is refused. nil = ``defaultMaxResources``.
    public var maxResources: Int?
    /// Acquire a persistent license for the asset when its download starts (the engine's license step).
    public var license: LicenseRequest?

    /// The default cap on an asset's files: far above a real VOD asset (24 h of 2 s segments is 43,200 per
    /// track, so 129,600 for video, audio and subtitles) and small enough that the index stays quick.
    public static let defaultMaxResources = 200_000

    /// Parses `Name: value` header lines (as curl's `-H`), refusing names that are not HTTP tokens and values
    /// with line breaks. The error never repeats a value.
    public static func parseHeaders(_ lines: [String]) throws(DownloadError) -> [String: String]? {
        guard !lines.isEmpty else { return nil }
        var headers: [String: String] = [:]
        let token = CharacterSet(charactersIn: "!#$%&'*+-.^_`|~").union(.alphanumerics)
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { throw .invalidArgument("--header needs the form \"Name: value\"") }
            let name = String(line[..<colon]).trimmingCharacters(in: .whitespaces)
            let value = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty, name.unicodeScalars.allSatisfy({ token.contains($0) && $0.isASCII }) else {
                throw .invalidArgument("--header: \"\(name.prefix(40))\" is not a header name")
            }
            guard !value.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) else {
                throw .invalidArgument("--header \(name): the value may not contain line breaks")
            }
            headers[name] = value
        }
        return headers
    }

    /// The cap in force.
    public var resourceLimit: Int { max(maxResources ?? Self.defaultMaxResources, 1) }

    /// Creates options.
    public init(maxBitrate: Int? = nil, maxVideoBitrate: Int? = nil, maxAudioBitrate: Int? = nil, languages: [String] = [],
                includeEncryptionKeys: Bool = false, permittedMimeTypes: [String]? = nil, maxResources: Int? = nil,
                headers: [String: String]? = nil, license: LicenseRequest? = nil) {
        self.maxResources = maxResources
        self.license = license
        self.headers = headers
        self.maxBitrate = maxBitrate
        self.maxVideoBitrate = maxVideoBitrate
        self.maxAudioBitrate = maxAudioBitrate
        self.languages = languages
        self.includeEncryptionKeys = includeEncryptionKeys
        self.permittedMimeTypes = permittedMimeTypes
    }
}

/// The license an asset needs: from which server (nil: the one the device registered with), with which
/// entitlement token (kept with the asset like its headers; never logged), for which license asset ID (nil: the
/// download's ID).
public struct LicenseRequest: Sendable, Codable, Equatable {
    /// The license server.
    public var server: String?
    /// The entitlement token.
    public var token: String?
    /// The asset ID the license server knows the content by.
    public var assetID: String?

    /// Creates a request.
    public init(server: String? = nil, token: String? = nil, assetID: String? = nil) {
        self.server = server
        self.token = token
        self.assetID = assetID
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
        public var offset: Int
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

extension DownloadOptions {
    /// The prefix of a sealed value in a stored record (a value without it was stored by an earlier version).
    static let sealedPrefix = "sealed:"

    /// The options with their secrets — header values, the license's token — sealed by `box`, for the index.
    func sealingSecrets(with box: (any SecretSealing)?) throws -> DownloadOptions {
        guard let box else { return self }
        var sealed = self
        sealed.headers = try headers.map { try $0.mapValues { Self.sealedPrefix + (try box.seal($0)) } }
        if let token = license?.token { sealed.license?.token = Self.sealedPrefix + (try box.seal(token)) }
        return sealed
    }

    /// The options with their secrets opened by `box` (values stored unsealed by an earlier version as they are).
    func openingSecrets(with box: (any SecretSealing)?) throws -> DownloadOptions {
        func open(_ value: String) throws -> String {
            guard value.hasPrefix(Self.sealedPrefix) else { return value }
            guard let box else { throw DownloadError.storage("a sealed secret needs the device key of the data directory") }
            return try box.open(String(value.dropFirst(Self.sealedPrefix.count)))
        }
        var opened = self
        opened.headers = try headers.map { try $0.mapValues(open) }
        if let token = license?.token { opened.license?.token = try open(token) }
        return opened
    }

    /// True when a secret is stored unsealed (a record of an earlier version).
    var hasUnsealedSecrets: Bool {
        (headers ?? [:]).values.contains { !$0.hasPrefix(Self.sealedPrefix) } || (license?.token.map { !$0.hasPrefix(Self.sealedPrefix) } ?? false)
    }
}
