import Crypto
import CSatchelCrypto
import SatchelBytes
import SatchelTestSupport
import Testing
@testable import SatchelProtection

/// AES-128-CTR in place with the processor's AES instructions (CSatchelCrypto) against swift-crypto's.
@Suite("AES-CTR in place")
struct AESCounterTests {
    /// Both ways over `range` of `buffer`: the accelerated one and swift-crypto's.
    static func both(_ buffer: [UInt8], _ range: Range<Int>, key: [UInt8], counter: [UInt8]) throws -> (fast: [UInt8], portable: [UInt8]) {
        let symmetric = SymmetricKey(data: key)
        var fast = buffer, portable = buffer
        try BlockCipher.inPlace(&fast) { (bytes) throws(ProtectionError) in try BlockCipher.ctr(bytes, range, key: symmetric, counter: counter) }
        try BlockCipher.inPlace(&portable) { (bytes) throws(ProtectionError) in
            try BlockCipher.ctr(bytes, range, key: symmetric, counter: counter, accelerated: false)
        }
        return (fast, portable)
    }

    @Test("this x86-64 machine has the AES instructions, so the accelerated path is the one measured and tested")
    func available() {
        #if arch(x86_64) && os(Linux)
        #expect(satchel_aes128_ctr_available() == 1)
        #endif
    }

    @Test("NIST SP 800-38A F.5.1 (CTR-AES128): both ways give the published ciphertext, and decrypting it gives the plaintext back")
    func nistVector() throws {
        let key = try Hex.decode("2b7e151628aed2a6abf7158809cf4f3c"), counter = try Hex.decode("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff")
        let plain = try Hex.decode("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e5130c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710")
        let cipher = try Hex.decode("874d6191b620e3261bef6864990db6ce9806f66b7970fdff8617187bb9fffdff5ae4df3edbd5d35e5b4f09020db03eab1e031dda2fbe03d1792170a0f3009cee")
        let (fast, portable) = try Self.both(plain, plain.indices, key: key, counter: counter)
        #expect(fast == cipher && portable == cipher)
        #expect(try Self.both(cipher, cipher.indices, key: key, counter: counter).fast == plain)
    }

    @Test("seeded: any length and offset, counters about to carry into the high half or wrap around 2^128, the same bytes both ways; nothing outside the range changes")
    func equivalence() throws {
        var random = SplitMix64(seed: 20_261_125)
        let lengths = [0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 129, 255, 4_099, 65_536 + 7]
        for index in 0..<240 {
            let key = random.bytes(16)
            var counter = random.bytes(16)
            switch index % 3 {
            case 0: for i in 8..<16 { counter[i] = 0xFF }; counter[15] = UInt8.random(in: 0xF0...0xFF, using: &random)  // low half about to carry
            case 1: counter = [UInt8](repeating: 0xFF, count: 16); counter[15] = UInt8.random(in: 0xF8...0xFF, using: &random)  // wraps to zero
            default: break
            }
            let length = index < lengths.count ? lengths[index] : Int.random(in: 0...3_000, using: &random)
            let lead = Int.random(in: 0...17, using: &random), tail = Int.random(in: 0...9, using: &random)
            let buffer = random.bytes(lead + length + tail)
            let (fast, portable) = try Self.both(buffer, lead..<(lead + length), key: key, counter: counter)
            #expect(fast == portable, "length \(length), case \(index % 3)")
            #expect(fast[..<lead] == buffer[..<lead] && fast[(lead + length)...] == buffer[(lead + length)...])
            #expect(length < 16 || fast[lead..<(lead + length)] != buffer[lead..<(lead + length)])
        }
    }

    @Test("a counter block that is not 16 bytes, or a range outside the buffer, is a typed error")
    func refusals() throws {
        var bytes = [UInt8](repeating: 0, count: 32)
        let key = SymmetricKey(size: .bits128)
        #expect(throws: ProtectionError.self) {
            try BlockCipher.inPlace(&bytes) { (buffer) throws(ProtectionError) in try BlockCipher.ctr(buffer, 0..<16, key: key, counter: [1, 2, 3]) }
        }
        #expect(throws: ProtectionError.self) {
            try BlockCipher.inPlace(&bytes) { (buffer) throws(ProtectionError) in
                try BlockCipher.ctr(buffer, 16..<40, key: key, counter: [UInt8](repeating: 0, count: 16))
            }
        }
    }
}
