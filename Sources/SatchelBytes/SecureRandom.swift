/// Cryptographically secure random bytes.
///
/// Backed by `SystemRandomNumberGenerator`, which reads the kernel CSPRNG
/// (`getrandom` on Linux, `arc4random_buf` on Apple platforms).
public enum SecureRandom {
    /// Returns `count` random bytes.
    public static func bytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var out = [UInt8](repeating: 0, count: max(count, 0))
        var index = 0
        while index < out.count {
            var word = generator.next()
            for _ in 0..<8 where index < out.count {
                out[index] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                index += 1
            }
        }
        return out
    }

    /// Random padding bytes that are never all 0x00 nor all 0xFF (FairPlay's TLLV rule),
    /// so that a padding field cannot be mistaken for filler.
    public static func padding(_ count: Int) -> [UInt8] {
        guard count > 0 else { return [] }
        while true {
            let candidate = bytes(count)
            if candidate.contains(where: { $0 != 0x00 }) && candidate.contains(where: { $0 != 0xFF }) {
                return candidate
            }
        }
    }

    /// Shuffles a collection with the secure generator.
    public static func shuffled<T>(_ items: [T]) -> [T] {
        var generator = SystemRandomNumberGenerator()
        return items.shuffled(using: &generator)
    }
}
