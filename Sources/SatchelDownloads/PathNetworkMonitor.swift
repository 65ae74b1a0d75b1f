#if canImport(Network)
import Foundation
import Network

/// The network's type on Apple platforms, from `NWPathMonitor`: a path that is expensive (cellular, a personal
/// hotspot) or constrained (Low Data Mode) is metered; an unsatisfied path is no network.
public final class PathNetworkMonitor: NetworkMonitor {
    private let readings = SettableNetwork(.unknown)
    private let monitor = NWPathMonitor()

    /// Starts monitoring on a queue of its own.
    public init() {
        let readings = readings
        monitor.pathUpdateHandler = { path in readings.set(Self.networkType(path)) }
        monitor.start(queue: DispatchQueue(label: "satchel.network"))
    }

    deinit { monitor.cancel() }

    /// The latest reading (unknown until the first path arrives, a moment after start).
    public var current: NetworkType { readings.current }

    /// Each reading that differs from the one before.
    public func changes() -> AsyncStream<NetworkType> { readings.changes() }

    private static func networkType(_ path: NWPath) -> NetworkType {
        guard path.status == .satisfied else { return .none }
        return path.isExpensive || path.isConstrained ? .cellular : .unmetered
    }
}
#endif
