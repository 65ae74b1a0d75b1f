import Foundation
import SatchelBytes
import SatchelStreams

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
    /// MIME types a single-file download may have (`video/*` style wildcards allowed); nil = `MIMEType/defaultPermitted`;
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
    /// The feed the asset belongs to: enqueued by a subscription, or named by the app. It
    /// then counts toward that feed's quota and may be deleted to make room for a newer item.
    public var feed: FeedMembership?
    /// The app's description of the asset (the per-asset metadata), stored and returned as given.
    public var description: String?
    /// The app's own values for the asset (`userInfo`), stored and returned as given.
    public var userInfo: [String: JSONValue]?
    /// Which addresses its files may come from (nil: any). A feed's items are `publicOnly` unless the backplane's
    /// settings allow private origins.
    public var origins: OriginPolicy?

    /// The default cap on an asset's files (`PlanOptions/defaultMaxResources`).
    public static let defaultMaxResources = PlanOptions.defaultMaxResources

    /// Parses `Name: value` header lines (as curl's `-H`), refusing names that are not HTTP tokens and values
    /// with line breaks. The error never repeats a value.
    package static func parseHeaders(_ lines: [String]) throws(DownloadError) -> [String: String]? {
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

    /// What the planners need of these options.
    public var planOptions: PlanOptions {
        PlanOptions(maxBitrate: maxBitrate, maxVideoBitrate: maxVideoBitrate, maxAudioBitrate: maxAudioBitrate, languages: languages,
                    includeEncryptionKeys: includeEncryptionKeys, permittedMimeTypes: permittedMimeTypes, resourceLimit: resourceLimit)
    }

    /// Creates options.
    public init(maxBitrate: Int? = nil, maxVideoBitrate: Int? = nil, maxAudioBitrate: Int? = nil, languages: [String] = [],
                includeEncryptionKeys: Bool = false, permittedMimeTypes: [String]? = nil, maxResources: Int? = nil,
                headers: [String: String]? = nil, license: LicenseRequest? = nil, feed: FeedMembership? = nil) {
        self.feed = feed
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
    /// A FairPlay key instead of a Satchel license: the client's credentials (nil: a Satchel license).
    public var fairPlay: FairPlayLicenseOptions?

    /// Creates a request.
    public init(server: String? = nil, token: String? = nil, assetID: String? = nil, fairPlay: FairPlayLicenseOptions? = nil) {
        self.server = server
        self.token = token
        self.assetID = assetID
        self.fairPlay = fairPlay
    }
}

/// What a FairPlay client needs to ask for an asset's persistable key: the app's Application Certificate and, for
/// Satchel's software client, its development DASk (kept sealed with the asset, like the token; never logged).
public struct FairPlayLicenseOptions: Sendable, Codable, Equatable {
    /// The Application Certificate (DER or PEM), base64.
    public var certificate: String
    /// The software client's development DASk, hex (nil: a device with a FairPlay client of its own).
    public var simulatorSecret: String?

    /// Options of `certificate` (base64) and the software client's `simulatorSecret` (hex).
    public init(certificate: String, simulatorSecret: String? = nil) {
        self.certificate = certificate
        self.simulatorSecret = simulatorSecret
    }
}

/// An asset's place in a feed, with what the feed (or the app's data source) says of it.
public struct FeedMembership: Sendable, Codable, Equatable {
    /// The feed.
    public var feedID: String
    /// The item's asset ID in the feed (the download's ID when it is a valid one).
    public var assetID: String
    /// When the item was published (the oldest is deleted first to make room).
    public var published: Date
    /// Its title.
    public var title: String?
    /// The app's own values for it.
    public var metadata: [String: String]?

    /// A membership.
    public init(feedID: String, assetID: String, published: Date, title: String? = nil, metadata: [String: String]? = nil) {
        self.feedID = feedID
        self.assetID = assetID
        self.published = published
        self.title = title
        self.metadata = metadata
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
        if let secret = license?.fairPlay?.simulatorSecret { sealed.license?.fairPlay?.simulatorSecret = Self.sealedPrefix + (try box.seal(secret)) }
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
        if let secret = license?.fairPlay?.simulatorSecret { opened.license?.fairPlay?.simulatorSecret = try open(secret) }
        return opened
    }

    /// True when a secret is stored unsealed (a record of an earlier version).
    var hasUnsealedSecrets: Bool {
        (headers ?? [:]).values.contains { !$0.hasPrefix(Self.sealedPrefix) } || (license?.token.map { !$0.hasPrefix(Self.sealedPrefix) } ?? false)
            || (license?.fairPlay?.simulatorSecret.map { !$0.hasPrefix(Self.sealedPrefix) } ?? false)
    }
}
