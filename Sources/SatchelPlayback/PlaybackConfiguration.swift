import SatchelStreams

extension PlaybackProxy {
    /// Where the proxy listens and how it serves.
    public struct Configuration: Sendable {
        /// A loopback address: 127.0.0.1 (default), ::1 or localhost.
        public var host: String
        /// The port (0: any free port).
        public var port: Int
        /// Decrypt, or pass the protection through.
        public var mode: PlaybackMode
        /// In pass-through mode: forward the players' key and license requests through the proxy, adding these
        /// extras (custom headers, custom data, the token); nil: key URIs are left as the playlists write them.
        public var forwarding: LicenseRequestExtras?
        /// Audio languages preferred when a DASH source is transcribed to HLS.
        public var languages: [String]
        /// The hosts `forwarding`'s credentials may go to (`host`, or `host:port` for that port alone): the
        /// license server's, and any the user allows. A key URI on another host is left as the playlist wrote it.
        public var licenseHosts: [String]
        /// The slowest an origin may send a file (a trickle is cut and the player told).
        public var originPace: OriginPace
        /// When the rights end mid-play, how long a media request is held waiting for a renewal or a new license
        /// before it is refused (the player keeps playing its buffer meanwhile); zero refuses at once.
        public var holdOff: Duration
        /// The longest SAMPLE-AES MPEG-TS segment made clear whole in memory, where it was read, and sent with its
        /// length; a longer one is made clear as it streams and sent chunked (its length is known only at the end).
        public var transportInMemory: Int

        /// Creates a configuration.
        public init(host: String = "127.0.0.1", port: Int = 0, mode: PlaybackMode = .decrypt, forwarding: LicenseRequestExtras? = nil,
                    languages: [String] = [], licenseHosts: [String] = [], originPace: OriginPace = OriginPace(), holdOff: Duration = .seconds(15),
                    transportInMemory: Int = 16 << 20) {
            self.originPace = originPace
            self.host = host
            self.port = port
            self.mode = mode
            self.forwarding = forwarding
            self.languages = languages
            self.licenseHosts = licenseHosts
            self.holdOff = holdOff
            self.transportInMemory = transportInMemory
        }

        /// The `licenseHosts` entry of a server URL (`host:port`, or `host` when it gives no port); nil when it
        /// names no host.
        public static func licenseHost(of server: String) -> String? {
            KeyForwarding.host(of: server)
        }
    }
}

/// How the proxy treats protected content.
public enum PlaybackMode: String, Sendable, CaseIterable {
    /// Decrypt for players without DRM: clear segments, no key tags.
    case decrypt
    /// Keep the protection and the key tags (players with DRM).
    case passthrough
}
