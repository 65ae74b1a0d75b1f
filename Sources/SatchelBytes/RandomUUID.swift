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
}
