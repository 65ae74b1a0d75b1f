import Foundation
import SatchelBytes

/// Seed 003's download rules.
public struct DownloadRules: Sendable, Codable, Equatable {
    /// At most this many downloaded (complete) assets; more wait until some are deleted. Default 100.
    public var maxDownloadedAssets: Int
    /// At most this many bytes under the engine's directory; a download stops (and waits) before crossing it.
    public var maxStorageAllowed: Int64
    /// At least this many bytes stay free on the device; checked before and during a download. Default 1 GiB.
    public var headroom: Int64
    /// Whether downloading over a cellular network is permitted. Default false.
    public var downloadOverCellular: Bool

    /// Creates rules (seed 003's defaults).
    public init(maxDownloadedAssets: Int = 100, maxStorageAllowed: Int64 = .max, headroom: Int64 = 1 << 30, downloadOverCellular: Bool = false) {
        self.maxDownloadedAssets = maxDownloadedAssets
        self.maxStorageAllowed = maxStorageAllowed
        self.headroom = headroom
        self.downloadOverCellular = downloadOverCellular
    }
}

/// The kind of network the device is on.
public enum NetworkType: String, Sendable, Codable {
    /// Wi-Fi, Ethernet, loopback: not metered.
    case unmetered
    /// A metered cellular network.
    case cellular
    /// No network.
    case none
}

/// The environment the engine consults: the clock, free space, network type. Injected in tests.
public struct DownloadEnvironment: Sendable {
    /// The clock (availability windows, completion and first-play times).
    public var clock: any WallClock
    /// Free bytes on the volume holding a path (nil when unknown).
    public var freeSpace: @Sendable (String) -> Int64?
    /// The current network type.
    public var networkType: @Sendable () -> NetworkType

    /// Creates an environment.
    public init(clock: any WallClock = SystemClock(), freeSpace: @escaping @Sendable (String) -> Int64? = DownloadEnvironment.volumeFreeSpace,
                networkType: @escaping @Sendable () -> NetworkType = { .unmetered }) {
        self.clock = clock
        self.freeSpace = freeSpace
        self.networkType = networkType
    }

    /// Free bytes available to unprivileged users on the volume holding `path` (statvfs).
    public static func volumeFreeSpace(_ path: String) -> Int64? {
        var stats = statvfs()
        guard statvfs(path, &stats) == 0 else { return nil }
        return Int64(stats.f_bavail) * Int64(stats.f_frsize)
    }
}
