/// What the backplane pushes to every device (the global default Expiry After Download and Expiry After
/// Play, "transmitted to all SDK instances"; and download rules). A field left nil leaves the device's own value.
public struct BackplaneSettings: Codable, Sendable, Equatable {
    /// The default Expiry After Download, in seconds, for assets added without one.
    public var expiryAfterDownload: UInt32?
    /// The default Expiry After Play, in seconds, for assets added without one.
    public var expiryAfterPlay: UInt32?
    /// Downloaded assets a device keeps at most (its download rule).
    public var maxDownloadedAssets: Int?
    /// Bytes the engine may use at most.
    public var maxStorageAllowed: Int64?
    /// Bytes left free on the device at least.
    public var headroom: Int64?
    /// Whether downloading over a cellular network is permitted.
    public var downloadOverCellular: Bool?
    /// How long a stream slot's lease lasts, in seconds, unless the device renews it (nil: a minute).
    public var streamLease: UInt32?
    /// The event kinds devices do not report (the mandatory ones cannot be turned off); an empty list turns every
    /// kind on again.
    public var disabledEvents: [DeviceEventKind]?
    /// Whether a feed's items may be fetched from private, loopback or link-local addresses (nil, false: public
    /// addresses only, so a feed cannot point a device at its own network).
    public var allowPrivateFeedOrigins: Bool?

    /// Settings; nil fields are left as each device has them.
    public init(expiryAfterDownload: UInt32? = nil, expiryAfterPlay: UInt32? = nil, maxDownloadedAssets: Int? = nil,
                maxStorageAllowed: Int64? = nil, headroom: Int64? = nil, downloadOverCellular: Bool? = nil, streamLease: UInt32? = nil,
                disabledEvents: [DeviceEventKind]? = nil, allowPrivateFeedOrigins: Bool? = nil) {
        self.allowPrivateFeedOrigins = allowPrivateFeedOrigins
        self.expiryAfterDownload = expiryAfterDownload
        self.expiryAfterPlay = expiryAfterPlay
        self.maxDownloadedAssets = maxDownloadedAssets
        self.maxStorageAllowed = maxStorageAllowed
        self.headroom = headroom
        self.downloadOverCellular = downloadOverCellular
        self.streamLease = streamLease
        self.disabledEvents = disabledEvents
    }

    /// The settings checked: windows of at least a second, counts and sizes not negative.
    public func validated() throws(BackplaneError) -> BackplaneSettings {
        if expiryAfterDownload == 0 || expiryAfterPlay == 0 { throw .badRequest("an expiry window is at least one second") }
        if let maxDownloadedAssets, maxDownloadedAssets < 0 { throw .badRequest("max downloaded assets cannot be negative") }
        if let maxStorageAllowed, maxStorageAllowed < 0 { throw .badRequest("max storage cannot be negative") }
        if let headroom, headroom < 0 { throw .badRequest("headroom cannot be negative") }
        if let streamLease, !(1...86_400).contains(streamLease) { throw .badRequest("a stream lease is 1 second to 1 day") }
        if let mandatory = disabledEvents?.first(where: \.isMandatory) {
            throw .badRequest("\(mandatory.rawValue) cannot be turned off: download queued, started, completed, error, max errors reset and reset are always reported")
        }
        return self
    }

    /// These settings with each field `newer` sets put over them.
    public func updated(with newer: BackplaneSettings) -> BackplaneSettings {
        BackplaneSettings(expiryAfterDownload: newer.expiryAfterDownload ?? expiryAfterDownload, expiryAfterPlay: newer.expiryAfterPlay ?? expiryAfterPlay,
                          maxDownloadedAssets: newer.maxDownloadedAssets ?? maxDownloadedAssets,
                          maxStorageAllowed: newer.maxStorageAllowed ?? maxStorageAllowed, headroom: newer.headroom ?? headroom,
                          downloadOverCellular: newer.downloadOverCellular ?? downloadOverCellular, streamLease: newer.streamLease ?? streamLease,
                          disabledEvents: newer.disabledEvents ?? disabledEvents,
                          allowPrivateFeedOrigins: newer.allowPrivateFeedOrigins ?? allowPrivateFeedOrigins)
    }
}
