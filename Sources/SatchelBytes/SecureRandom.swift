#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Cryptographically secure random bytes from the kernel CSPRNG
/// (`getrandom` on Linux, `arc4random_buf` on Apple platforms).
public enum SecureRandom {
    /// Returns `count` random bytes, fetched in as few system calls as possible.
    public static func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: max(count, 0))
        fill(&out)
        return out
    }

    /// Overwrites `buffer` with random bytes.
    public static func fill(_ buffer: inout [UInt8]) {
        buffer.withUnsafeMutableBytes { raw in
            guard raw.count > 0 else { return }
            #if canImport(Darwin)
            if let base = raw.baseAddress { arc4random_buf(base, raw.count) }
            #else
            if raw.count <= RandomReservoir.maximumTake {
                RandomReservoir.shared.take(into: raw)
            } else {
                readKernelRandom(into: raw)
            }
            #endif
        }
    }

    #if !canImport(Darwin)
    /// The kernel CSPRNG, opened once for bulk reads.
    private static let urandom: Int32 = open("/dev/urandom", O_RDONLY | O_CLOEXEC)

    /// Fills `raw` straight from the kernel CSPRNG.
    static func readKernelRandom(into raw: UnsafeMutableRawBufferPointer) {
        guard let base = raw.baseAddress else { return }
        var filled = 0
        if urandom >= 0 {
            while filled < raw.count {
                let result = read(urandom, base + filled, raw.count - filled)
                if result > 0 { filled += result } else if errno != EINTR { break }
            }
        }
        if filled < raw.count {
            // No /dev/urandom: the standard library's CSPRNG (getrandom) for the rest.
            var generator = SystemRandomNumberGenerator()
            for index in filled..<raw.count { raw[index] = UInt8.random(in: 0...255, using: &generator) }
        }
    }
    #endif

    /// Random padding bytes that are never all 0x00 nor all 0xFF (FairPlay's TLLV rule).
    public static func padding(_ count: Int) -> [UInt8] {
        var pool = Pool(capacity: count + 16)
        return Array(pool.padding(count))
    }

    /// Shuffles an array with the secure generator.
    public static func shuffled<T>(_ items: [T]) -> [T] {
        var pool = Pool(capacity: 8 * items.count)
        return items.shuffled(using: &pool)
    }

    /// A buffer of secure random bytes fetched with one system call and handed out on demand;
    /// refills itself when empty. Use one per operation that needs many small random values.
    public struct Pool: RandomNumberGenerator {
        private var buffer: [UInt8]
        private var position: Int

        /// A pool holding `capacity` random bytes to start with.
        public init(capacity: Int = 256) {
            buffer = SecureRandom.bytes(max(capacity, 8))
            position = 0
        }

        /// Takes `count` random bytes.
        public mutating func take(_ count: Int) -> [UInt8] { Array(takeSlice(count)) }

        /// Takes `count` random bytes as a slice of the pool's buffer (no copy).
        public mutating func takeSlice(_ count: Int) -> ArraySlice<UInt8> {
            guard count > 0 else { return [] }
            if buffer.count - position < count {
                buffer = SecureRandom.bytes(max(count, buffer.count))
                position = 0
            }
            defer { position += count }
            return buffer[position..<(position + count)]
        }

        /// Takes random padding that is never all 0x00 nor all 0xFF.
        public mutating func padding(_ count: Int) -> ArraySlice<UInt8> {
            guard count > 0 else { return [] }
            while true {
                let candidate = takeSlice(count)
                if candidate.contains(where: { $0 != 0x00 }) && candidate.contains(where: { $0 != 0xFF }) { return candidate }
            }
        }

        public mutating func next() -> UInt64 {
            if buffer.count - position < 8 {
                buffer = SecureRandom.bytes(buffer.count)
                position = 0
            }
            var value: UInt64 = 0
            for index in position..<(position + 8) { value = value << 8 | UInt64(buffer[index]) }
            position += 8
            return value
        }
    }
}

#if !canImport(Darwin)
/// A process-wide buffer of kernel randomness, so that small requests (IVs, padding) cost a
/// copy instead of a system call. Bytes are handed out once and zeroed as they leave.
final class RandomReservoir: Sendable {
    static let shared = RandomReservoir()
    static let maximumTake = 1024
    private static let size = 16 * 1024

    /// The buffered bytes and the next one to hand out.
    private let state = Locked((buffer: [UInt8](repeating: 0, count: RandomReservoir.size), position: RandomReservoir.size))

    private init() {}

    /// Copies `raw.count` (at most ``maximumTake``) fresh random bytes into `raw`.
    func take(into raw: UnsafeMutableRawBufferPointer) {
        state.withLock { state in
            if Self.size - state.position < raw.count {
                state.buffer.withUnsafeMutableBytes { SecureRandom.readKernelRandom(into: $0) }
                state.position = 0
            }
            let position = state.position
            state.buffer.withUnsafeMutableBytes { source in
                guard let from = source.baseAddress, let to = raw.baseAddress else { return }
                to.copyMemory(from: from + position, byteCount: raw.count)
                (from + position).initializeMemory(as: UInt8.self, repeating: 0, count: raw.count)
            }
            state.position += raw.count
        }
    }
}
#endif
