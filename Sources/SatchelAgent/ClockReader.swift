import Foundation
import SatchelRights
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads the device's clocks for the secure clock (a seam: tests give fixed readings).
public protocol ClockReader: Sendable {
    /// The wall clock, the boot clock and the boot's identity, now.
    func read() -> ClockReading
}

/// The system's clocks: the wall clock, `CLOCK_BOOTTIME` (Linux; uptime elsewhere) and the kernel's boot ID.
public struct SystemClockReader: ClockReader {
    /// The system's clocks.
    public init() {}

    /// Twenty years: a longer uptime is not believed.
    static let plausibleUptime: TimeInterval = 20 * 365.25 * 86_400

    public func read() -> ClockReading {
        let wall = Date()
        #if os(Linux)
        var time = timespec()
        clock_gettime(CLOCK_BOOTTIME, &time)
        let boot = TimeInterval(time.tv_sec) + TimeInterval(time.tv_nsec) / 1e9
        let id = (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? "unknown"
        #else
        let boot = ProcessInfo.processInfo.systemUptime
        // The boot's start by the wall clock, to the minute: a clock set back gives another "boot", whose
        // readings are then compared with the high-water mark alone (still a rollback beyond the tolerance).
        let id = "boot-\(Int((wall.timeIntervalSince1970 - boot) / 60))"
        #endif
        // A boot clock of decades is not one (libfaketime, for one, sets it to the faked wall time): its
        // readings get an ID of their own, so they are never compared with real ones.
        guard boot < Self.plausibleUptime else { return ClockReading(wall: wall, boot: boot, bootID: ClockReading.implausibleBootID) }
        return ClockReading(wall: wall, boot: boot, bootID: id)
    }
}
