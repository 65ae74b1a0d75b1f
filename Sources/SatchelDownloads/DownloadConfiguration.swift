import Foundation
import Logging
import SatchelBytes

extension DownloadManager {
    /// How the engine works.
    public struct Configuration: Sendable {
        /// The engine's directory: `downloads.sqlite` and the assets directory live here.
        public var dataDirectory: String
        /// Where assets go: a path relative to `dataDirectory` or absolute. Default `assets`.
        public var destination: String
        /// The download rules.
        public var rules: DownloadRules
        /// Files of one asset fetched at once when an attempt begins (default 16: on an emulated 100 Mbit/s link with a
        /// 150 ms round trip, 8 is 18 % slower than 16, and 32 gains nothing; see `SatchelBenchmarks link`).
        public var parallelism: Int
        /// The most files at once an attempt grows to while more connections bring more throughput (default 48;
        /// ``AdaptiveParallelism``). Equal to `parallelism`: fixed.
        public var maxParallelism: Int
        /// Pause between the three attempts of one pass.
        public var retryDelay: Duration
        /// Pause before another pass through the queue for errored assets.
        public var passDelay: Duration
        /// A connection idle this long fails (and is retried).
        public var readTimeout: Duration
        /// Connecting longer than this fails.
        public var connectTimeout: Duration
        /// Seconds that must be cached from the start before `isReadyToPlay`.
        public var readyDuration: Double
        /// How often progress is reported (and other processes' pause/remove/disable noticed).
        public var progressInterval: Duration
        /// A body slower than this fails (retryable): below 1 KiB/s for 30 s by default.
        public var lowSpeed: LowSpeedLimit
        /// Where the engine logs its decisions: why an asset waits, each attempt, each retry and its reason.
        /// URLs appear without their query strings; headers and tokens never appear.
        public var logger: Logger
        /// Seals the secrets kept in the index (header values, entitlement tokens) with the device's key
        /// (`SecretSealing`; the agent's `DeviceSecretBox`); nil: they are stored as given, in an owner-only file.
        public var secrets: (any SecretSealing)?
        /// The most assets the queue holds, whatever their state (10,000; at most 100,000): adding one more is refused
        /// (``DownloadError/queueFull(_:)``), so every pass over the queue reads a bounded number of records.
        public var maximumAssets = 10_000

        /// Creates a configuration.
        public init(dataDirectory: String, destination: String = "assets", rules: DownloadRules = DownloadRules(), parallelism: Int = 16,
                    maxParallelism: Int = 48,
                    retryDelay: Duration = .seconds(1), passDelay: Duration = .seconds(2), readTimeout: Duration = .seconds(30),
                    connectTimeout: Duration = .seconds(10), readyDuration: Double = 10, progressInterval: Duration = .milliseconds(250),
                    lowSpeed: LowSpeedLimit = LowSpeedLimit(), logger: Logger = Logger(label: "satchel.downloads")) {
            self.lowSpeed = lowSpeed
            self.logger = logger
            self.dataDirectory = dataDirectory
            self.destination = destination
            self.rules = rules
            self.parallelism = parallelism
            self.maxParallelism = max(maxParallelism, parallelism)
            self.retryDelay = retryDelay
            self.passDelay = passDelay
            self.readTimeout = readTimeout
            self.connectTimeout = connectTimeout
            self.readyDuration = readyDuration
            self.progressInterval = progressInterval
        }

        /// The assets' root directory.
        var assetRoot: String {
            destination.hasPrefix("/") ? destination : (dataDirectory as NSString).appendingPathComponent(destination)
        }
    }

    /// What ``run()`` left behind.
    public struct RunSummary: Sendable, Equatable {
        /// Assets per state (paused ones under their state).
        public var states: [DownloadState: Int]
        /// Assets paused by the user.
        public var paused: Int
        /// False when downloads are switched off.
        public var enabled: Bool
        /// Set when the index could not be read or written: the run stopped rather than carry on unrecorded.
        public var storageFailure: String?

        /// True when every asset is complete.
        public var allComplete: Bool { storageFailure == nil && states.filter { $0.key != .complete && $0.value > 0 }.isEmpty }
    }
}
