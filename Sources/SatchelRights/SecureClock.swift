import Foundation

/// One reading of the device's clocks: the wall clock, and the boot clock (seconds since boot, which the
/// user cannot set) with the identity of the boot it belongs to.
public struct ClockReading: Codable, Sendable, Equatable {
    /// The wall clock.
    public var wall: Date
    /// Seconds since boot (Linux `CLOCK_BOOTTIME`): only comparable within one boot.
    public var boot: TimeInterval
    /// The boot's identity (Linux `/proc/sys/kernel/random/boot_id`); readings of different boots are not compared.
    public var bootID: String

    /// The boot ID of readings whose boot clock cannot be believed (decades of uptime: libfaketime sets the boot
    /// clock to its faked wall time): their boot clock is never used to measure time passed.
    public static let implausibleBootID = "implausible-boot-clock"

    /// Creates a reading.
    public init(wall: Date, boot: TimeInterval, bootID: String) {
        self.wall = wall
        self.boot = boot
        self.bootID = bootID
    }
}

/// What the secure clock reports when its trust changes.
public enum ClockEvent: String, Codable, Sendable, Equatable {
    /// The wall clock went back beyond the tolerance: date-based rights are untrusted until the server's
    /// signed time confirms the clock again. Reported once per loss of trust.
    case untrustedTime = "untrusted-time"
    /// The server's signed time agreed with the wall clock: date-based rights count again.
    case trustRestored = "trust-restored"
}

/// PlayReady's secure clock as a value. It remembers the latest time known to have
/// passed — wall readings taken while trusted, advanced by the boot clock, and the license server's signed
/// times — and enters rollback mode when the wall clock falls behind that by more than the tolerance.
/// Only the server's signed time, with a wall clock that agrees with it, ends rollback mode. Persist the
/// value between runs (it is `Codable`).
public struct SecureClock: Codable, Sendable, Equatable {
    /// How far the wall clock may go back (or disagree with the server) before trust is lost; default 5 minutes.
    public var tolerance: TimeInterval
    /// False in rollback mode.
    public private(set) var trusted: Bool
    /// The latest time known to have passed, and the boot-clock reading taken with it.
    public private(set) var highWater: Date?
    private(set) var highWaterBoot: TimeInterval?
    private(set) var bootID: String?
    /// The last signed server time seen.
    public private(set) var serverTime: Date?
    /// The boot-clock reading taken when `serverTime` arrived, and its boot.
    private(set) var serverBoot: TimeInterval?
    private(set) var serverBootID: String?

    /// A clock that has seen nothing yet: trusted until a reading shows a rollback, or `untrusted` from the
    /// start (a damaged record: only the server's time restores trust).
    public init(tolerance: TimeInterval = 300, untrusted: Bool = false) {
        self.tolerance = tolerance
        trusted = !untrusted
    }

    /// The earliest time it can be now, from what the clock has seen: the high-water mark advanced by the
    /// boot clock when the reading belongs to the same boot (a boot clock that went back counts as zero).
    public func floor(_ reading: ClockReading) -> Date? {
        guard let highWater else { return nil }
        guard reading.bootID == bootID, let highWaterBoot else { return highWater }
        return highWater.addingTimeInterval(max(0, reading.boot - highWaterBoot))
    }

    /// Takes a reading of the device's clocks: a wall clock behind the floor by more than the tolerance ends
    /// trust (`untrustedTime`, once); while trusted, the high-water mark moves up to the reading.
    public mutating func observe(_ reading: ClockReading) -> [ClockEvent] {
        let floor = floor(reading)
        if trusted, let floor, reading.wall < floor.addingTimeInterval(-tolerance) {
            trusted = false
            return [.untrustedTime]
        }
        if trusted { raise(to: max(floor ?? reading.wall, reading.wall), reading) }
        return []
    }

    /// Takes a signed server time (a license, a renewal, a `GET /time` answer) with the reading taken when
    /// it arrived. A wall clock within the tolerance of the server restores trust (`trustRestored` if it was
    /// lost) and the high-water mark restarts from the server's time; a wall clock behind the server by more
    /// than the tolerance is a rollback; one ahead of it changes nothing (the rights only end sooner).
    public mutating func anchor(serverTime: Date, _ reading: ClockReading) -> [ClockEvent] {
        self.serverTime = serverTime
        serverBoot = reading.boot
        serverBootID = reading.bootID
        let skew = reading.wall.timeIntervalSince(serverTime)
        if abs(skew) <= tolerance {
            let wasTrusted = trusted
            trusted = true
            highWater = nil
            raise(to: max(serverTime, reading.wall), reading)
            return wasTrusted ? [] : [.trustRestored]
        }
        if skew < 0 {
            if trusted {
                trusted = false
                return [.untrustedTime]
            }
            return []
        }
        return observe(reading)
    }

    /// The server's time now, as the last signed server time advanced by the boot clock; nil when none was seen in
    /// this boot (or the boot clock cannot be believed). What a device dates its requests with: whatever its own
    /// clock says, the server sees its own time.
    public func serverNow(_ reading: ClockReading) -> Date? {
        guard let serverTime, let serverBoot, reading.bootID == serverBootID, reading.bootID != ClockReading.implausibleBootID,
              reading.boot >= serverBoot else { return nil }
        return serverTime.addingTimeInterval(reading.boot - serverBoot)
    }

    /// The time rights are evaluated at: the wall clock, never earlier than the floor; nil in rollback mode.
    public func now(_ reading: ClockReading) -> Date? {
        guard trusted else { return nil }
        guard let floor = floor(reading) else { return reading.wall }
        return max(floor, reading.wall)
    }

    /// Moves the high-water mark to `date` (callers pass at least the floor), anchored to this reading.
    private mutating func raise(to date: Date, _ reading: ClockReading) {
        highWater = date
        highWaterBoot = reading.boot
        bootID = reading.bootID
    }
}
