import Foundation
import SatchelSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The network's type from NetworkManager (Linux): `nmcli` is asked when the monitor starts, then every `interval`
/// on a thread of its own (no cooperative thread waits for it). Without NetworkManager — not installed, not
/// running, no answer within `timeout` — the type is ``NetworkType/unknown``, and the rules'
/// ``DownloadRules/meteredUnknown`` decides.
public final class NetworkManagerMonitor: NetworkMonitor {
    private let readings: SettableNetwork
    private let stopping = DispatchSemaphore(value: 0)

    /// Starts the monitor: one reading now (so ``current`` is known at once), then one every `interval`.
    /// `command` is the `nmcli` to run (looked up in `PATH`).
    public init(command: String = "nmcli", interval: Duration = .seconds(2), timeout: Duration = .seconds(3)) {
        let readings = SettableNetwork(Self.reading(command: command, timeout: timeout))
        self.readings = readings
        let stopping = stopping, pause = Self.milliseconds(interval)
        let thread = Thread {
            while stopping.wait(timeout: .now() + .milliseconds(pause)) == .timedOut {
                readings.set(Self.reading(command: command, timeout: timeout))
            }
        }
        thread.name = "satchel.network"
        thread.start()
    }

    deinit { stop() }

    /// The latest reading.
    public var current: NetworkType { readings.current }

    /// Each reading that differs from the one before.
    public func changes() -> AsyncStream<NetworkType> { readings.changes() }

    /// Stops asking NetworkManager (``current`` keeps the last reading).
    public func stop() {
        stopping.signal()
    }

    /// One reading: `nmcli`'s answer, or unknown when it gives none.
    public static func reading(command: String = "nmcli", timeout: Duration = .seconds(3)) -> NetworkType {
        guard let text = output(command, NetworkManagerReading.arguments, timeout: timeout) else { return .unknown }
        return NetworkManagerReading.networkType(text[...])
    }

    /// `command`'s standard output when it ends with status 0 within `timeout` (nil otherwise: it is killed), in the C
    /// locale (the words `yes` and `no` untranslated), at most `NetworkManagerReading/maximumLength` bytes.
    static func output(_ command: String, _ arguments: [String], timeout: Duration) -> String? {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }  // a child started meanwhile keeps neither end
        let (reading, writing) = (ends[0], ends[1])
        defer { close(reading) }
        var environment = ProcessInfo.processInfo.environment
        environment["LC_ALL"] = "C"
        let child = try? ChildProcess.spawn(command, arguments, environment: environment, input: ChildProcess.nullDevice, output: writing,
                                            error: ChildProcess.nullDevice)
        close(writing)
        guard let child else { return nil }
        let deadline = ContinuousClock.now + timeout
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        var finished = false
        while bytes.count < NetworkManagerReading.maximumLength {
            let left = milliseconds(deadline - ContinuousClock.now)
            guard left > 0 else { break }
            var poller = pollfd(fd: reading, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(clamping: left))
            if ready < 0, errno == EINTR { continue }
            guard ready > 0 else { break }
            let count = read(reading, &chunk, chunk.count)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                finished = count == 0
                break
            }
            bytes.append(contentsOf: chunk[..<count])
        }
        if !finished { child.signal(SIGKILL) }
        let status = child.waitBlocking()
        return finished && status == 0 ? String(decoding: bytes, as: UTF8.self) : nil
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return seconds < 0 ? 0 : Int.max }
        return Int(clamping: whole.addingReportingOverflow(attoseconds / 1_000_000_000_000_000).partialValue)
    }
}
