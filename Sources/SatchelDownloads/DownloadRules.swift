import Foundation
import SatchelBytes

/// The download rules.
public struct DownloadRules: Sendable, Codable, Equatable {
    /// At most this many downloaded (complete) assets; more wait until some are deleted. Default 100.
    public var maxDownloadedAssets: Int
    /// At most this many bytes under the engine's directory; a download stops (and waits) before crossing it.
    public var maxStorageAllowed: Int64
    /// At least this many bytes stay free on the device; checked before and during a download. Default 1 GiB.
    public var headroom: Int64
    /// Whether downloading over a cellular (metered) network is permitted. Default false: downloads never happen over
    /// one.
    public var downloadOverCellular: Bool
    /// What to do when the network's type cannot be detected (no network monitor on this system, or it did not
    /// answer). Default ``UnknownNetworkPolicy/deny``: an unknown network counts as metered, so downloads never happen
    /// over a cellular connection the device could not recognise. A server or a container without a network monitor
    /// sets ``UnknownNetworkPolicy/allow``.
    public var meteredUnknown: UnknownNetworkPolicy

    /// Creates rules (the defaults).
    public init(maxDownloadedAssets: Int = 100, maxStorageAllowed: Int64 = .max, headroom: Int64 = 1 << 30, downloadOverCellular: Bool = false,
                meteredUnknown: UnknownNetworkPolicy = .deny) {
        self.maxDownloadedAssets = maxDownloadedAssets
        self.maxStorageAllowed = maxStorageAllowed
        self.headroom = headroom
        self.downloadOverCellular = downloadOverCellular
        self.meteredUnknown = meteredUnknown
    }
}

/// Whether to download on a network whose type (metered or not) cannot be detected.
public enum UnknownNetworkPolicy: String, Sendable, Codable, CaseIterable {
    /// Download as on an unmetered network.
    case allow
    /// Wait as on a metered one (unless ``DownloadRules/downloadOverCellular``).
    case deny
}

/// The kind of network the device is on.
public enum NetworkType: String, Sendable, Codable {
    /// Wi-Fi, Ethernet, loopback: not metered.
    case unmetered
    /// A metered network: cellular, a phone's hotspot, a connection the user marked metered.
    case cellular
    /// No network.
    case none
    /// The type cannot be detected (no network monitor on this system, or it did not answer).
    case unknown
}

/// The environment the engine consults: the clock, free space, network type. Injected in tests.
public struct DownloadEnvironment: Sendable {
    /// The clock (availability windows, completion and first-play times).
    public var clock: any WallClock
    /// Free bytes on the volume holding a path (nil when unknown).
    public var freeSpace: @Sendable (String) -> Int64?
    /// The network monitor: the network's type now, and a wake when it changes.
    public var network: any NetworkMonitor

    /// Creates an environment. Without a `network`, the engine watches the platform's own monitor
    /// (``SystemNetwork/shared``: `NWPathMonitor` on Apple platforms, NetworkManager on Linux); an app that knows its
    /// network for certain passes a ``FixedNetwork`` or a ``SettableNetwork``.
    public init(clock: any WallClock = SystemClock(), freeSpace: @escaping @Sendable (String) -> Int64? = DownloadEnvironment.volumeFreeSpace,
                network: (any NetworkMonitor)? = nil) {
        self.clock = clock
        self.freeSpace = freeSpace
        self.network = network ?? SystemNetwork.shared
    }

    /// Free bytes available to unprivileged users on the volume holding `path` (statvfs).
    public static func volumeFreeSpace(_ path: String) -> Int64? {
        var stats = statvfs()
        guard statvfs(path, &stats) == 0 else { return nil }
        return Int64(stats.f_bavail) * Int64(stats.f_frsize)
    }
}
