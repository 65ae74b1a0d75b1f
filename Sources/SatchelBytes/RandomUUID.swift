import Foundation

extension SecureRandom {
    /// A random (version 4, RFC 9562) UUID from ``bytes(_:)``. Foundation's `UUID()` opens, reads and closes
    /// `/dev/urandom` for every UUID on Linux: three system calls on paths that make one per request.
    public static func uuid() -> UUID {
        var b = bytes(16)
        b[6] = (b[6] & 0x0F) | 0x40  // version 4
        b[8] = (b[8] & 0x3F) | 0x80  // the RFC's variant
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }

    /// A time-ordered (version 7, RFC 9562) UUID: the Unix time in milliseconds, then random bits. Rows keyed by
    /// these are added at the end of their index rather than at a random place in it (the audit writes thousands a
    /// second).
    public static func uuidV7(at date: Date = Date()) -> UUID {
        var b = bytes(16)
        let milliseconds = UInt64(max(0, min(date.timeIntervalSince1970 * 1000, Double(1 << 47))))
        for index in 0..<6 { b[index] = UInt8(truncatingIfNeeded: milliseconds >> (40 - 8 * UInt64(index))) }
        b[6] = (b[6] & 0x0F) | 0x70  // version 7
        b[8] = (b[8] & 0x3F) | 0x80  // the RFC's variant
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }
}
