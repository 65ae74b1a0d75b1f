import Foundation
import SatchelBytes

/// The network the engine downloads over: its type now, and a wake when it changes. The engine reads ``current``
/// before an asset starts and at every progress tick of a download (a switch to a metered network stops the
/// download within a tick), and wakes its background loop on each of ``changes()`` (a switch back resumes it).
public protocol NetworkMonitor: Sendable {
    /// The latest reading. Cheap: no I/O.
    var current: NetworkType { get }
    /// Each new reading from now on, when it differs from the one before. Ends when the consumer's task is cancelled.
    func changes() -> AsyncStream<NetworkType>
}

/// A network that never changes: ``unmetered`` for a server, or whatever an app knows for certain.
public struct FixedNetwork: NetworkMonitor {
    /// An unmetered network (for a server on a wired network).
    public static let unmetered = FixedNetwork(.unmetered)
    /// The type.
    public let current: NetworkType

    /// A network of `type`.
    public init(_ type: NetworkType) {
        current = type
    }

    /// Never yields.
    public func changes() -> AsyncStream<NetworkType> {
        AsyncStream { _ in }
    }
}

/// A network whose type the app sets: for an app that detects the network itself, and for tests. Also the
/// broadcaster the system monitors report through.
public final class SettableNetwork: NetworkMonitor {
    private struct State {
        var type: NetworkType
        var listeners: [Int: AsyncStream<NetworkType>.Continuation] = [:]
        var nextListener = 0
    }

    private let state: Locked<State>

    /// A network of `type` until ``set(_:)`` says otherwise.
    public init(_ type: NetworkType = .unmetered) {
        state = Locked(State(type: type))
    }

    /// The latest type set.
    public var current: NetworkType { state.current.type }

    /// Sets the type; every listener hears of it when it changed.
    public func set(_ type: NetworkType) {
        let listeners: [AsyncStream<NetworkType>.Continuation] = state.withLock { state in
            guard state.type != type else { return [] }
            state.type = type
            return Array(state.listeners.values)
        }
        for listener in listeners { listener.yield(type) }
    }

    /// Each type set from now on that differs from the one before.
    public func changes() -> AsyncStream<NetworkType> {
        let (stream, continuation) = AsyncStream.makeStream(of: NetworkType.self, bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { state in
            let id = state.nextListener
            state.nextListener += 1
            state.listeners[id] = continuation
            return id
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.listeners.removeValue(forKey: id) }
        }
        return stream
    }
}

/// The platform's network monitor, one per process: `NWPathMonitor` on Apple platforms, NetworkManager on Linux.
/// It is what a download engine built without a monitor watches.
public enum SystemNetwork {
    /// The process's monitor, started on first use.
    public static let shared: any NetworkMonitor = {
        #if canImport(Network)
        return PathNetworkMonitor()
        #else
        return NetworkManagerMonitor()
        #endif
    }()

    /// Where ``shared`` reads the network's type, as a person names it.
    public static var source: String {
        #if canImport(Network)
        return "the system's network path"
        #else
        return "NetworkManager"
        #endif
    }
}
