/// A seeded, reproducible mutator of byte strings (the in-process fuzzer's half that libFuzzer would be):
/// bit flips, interesting integers at any width and byte order, insertions, deletions, duplications,
/// huge decimal numbers (for text formats) and splices with other corpus members. The same seed gives
/// the same inputs on every machine.
public struct FuzzMutator {
    private var state: UInt64

    /// A mutator whose sequence is fixed by `seed`.
    public init(seed: UInt64) {
        state = seed
    }

    /// SplitMix64.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<bound` (bound > 0).
    public mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(max(bound, 1))) }

    static let interesting: [UInt64] = [0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF,
                                        0x7FFF_FFFF_FFFF_FFFF, 0x8000_0000_0000_0000, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFF0]
    static let numbers = ["-1", "0", "18446744073709551615", "18446744073709551616", "9223372036854775807", "1e300", "NaN",
                          "999999999999", "1000000000000", "-9223372036854775808", "0x7fffffff", "4294967296"]

    /// `input` changed by one to four mutations, some using `corpus` (splices).
    public mutating func mutate(_ input: [UInt8], corpus: [[UInt8]]) -> [UInt8] {
        var bytes = input
        for _ in 0...below(4) { mutateOnce(&bytes, corpus: corpus) }
        return bytes
    }

    private mutating func mutateOnce(_ bytes: inout [UInt8], corpus: [[UInt8]]) {
        if bytes.isEmpty { bytes = [UInt8(truncatingIfNeeded: next())] }
        let position = below(bytes.count)
        switch below(9) {
        case 0:  // flip a bit
            bytes[position] ^= 1 << UInt8(below(8))
        case 1:  // a random byte
            bytes[position] = UInt8(truncatingIfNeeded: next())
        case 2:  // an interesting integer, 1, 2, 4 or 8 bytes, either byte order
            let width = [1, 2, 4, 8][below(4)]
            let value = Self.interesting[below(Self.interesting.count)]
            let bigEndian = below(2) == 0
            for index in 0..<width where position + index < bytes.count {
                let shift = UInt64(bigEndian ? (width - 1 - index) * 8 : index * 8)
                bytes[position + index] = UInt8(truncatingIfNeeded: value >> shift)
            }
        case 3:  // delete a run
            let length = min(1 + below(64), bytes.count - position)
            bytes.removeSubrange(position..<(position + length))
        case 4:  // insert random bytes
            bytes.insert(contentsOf: (0..<(1 + below(16))).map { _ in UInt8(truncatingIfNeeded: next()) }, at: position)
        case 5:  // duplicate a run (repeated boxes, elements, lines)
            let length = min(1 + below(256), bytes.count - position)
            let run = bytes[position..<(position + length)]
            bytes.insert(contentsOf: Array(run), at: below(bytes.count + 1))
        case 6:  // a number that does not fit, where text has digits
            if let digit = bytes[position...].firstIndex(where: { (0x30...0x39).contains($0) }) {
                var end = digit
                while end < bytes.count, (0x30...0x39).contains(bytes[end]) || bytes[end] == 0x2E { end += 1 }
                bytes.replaceSubrange(digit..<end, with: Array(Self.numbers[below(Self.numbers.count)].utf8))
            } else {
                bytes.insert(contentsOf: Array(Self.numbers[below(Self.numbers.count)].utf8), at: position)
            }
        case 7:  // splice: the head of this input, the tail of another
            guard let other = corpus.isEmpty ? nil : corpus[below(corpus.count)], !other.isEmpty else { return }
            let cut = below(other.count)
            bytes = Array(bytes[..<position]) + other[cut...]
        default:  // truncate
            bytes.removeSubrange(position...)
        }
        if bytes.count > 1 << 20 { bytes.removeSubrange((1 << 20)...) }  // inputs stay small
    }
}
