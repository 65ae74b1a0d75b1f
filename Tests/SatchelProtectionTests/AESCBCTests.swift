import Crypto
import SatchelBytes
import SatchelTestSupport
import Testing
@testable import SatchelProtection

/// AES-128-CBC in place with the processor's AES instructions (CSatchelCrypto) against swift-crypto's.
@Suite("AES-CBC in place")
struct AESCBCTests {
    /// `buffer` with `range` encrypted (or decrypted) both ways: the accelerated one and swift-crypto's.
    static func both(_ buffer: [UInt8], _ range: Range<Int>, key: [UInt8], iv: [UInt8], encrypt: Bool) throws -> (fast: [UInt8], portable: [UInt8]) {
        let symmetric = SymmetricKey(data: key)
        var fast = buffer, portable = buffer
        try BlockCipher.inPlace(&fast) { (bytes) throws(ProtectionError) in try BlockCipher.cbc(bytes, range, key: symmetric, iv: iv, encrypt: encrypt) }
        try BlockCipher.inPlace(&portable) { (bytes) throws(ProtectionError) in
            try BlockCipher.cbc(bytes, range, key: symmetric, iv: iv, encrypt: encrypt, accelerated: false)
        }
        return (fast, portable)
    }

    @Test("NIST SP 800-38A F.2.1 and F.2.2 (CBC-AES128): both ways give the published ciphertext, and the plaintext back")
    func nistVector() throws {
        let key = try Hex.decode("2b7e151628aed2a6abf7158809cf4f3c"), iv = try Hex.decode("000102030405060708090a0b0c0d0e0f")
        let plain = try Hex.decode("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e5130c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710")
        let cipher = try Hex.decode("7649abac8119b246cee98e9b12e9197d5086cb9b507219ee95db113a917678b273bed6b8e3c1743b7116e69e222295163ff1caa1681fac09120eca307586e1a7")
        let encrypted = try Self.both(plain, plain.indices, key: key, iv: iv, encrypt: true)
        #expect(encrypted.fast == cipher && encrypted.portable == cipher)
        let decrypted = try Self.both(cipher, cipher.indices, key: key, iv: iv, encrypt: false)
        #expect(decrypted.fast == plain && decrypted.portable == plain)
    }

    @Test("seeded: any whole-block length at any offset, both directions, the same bytes both ways; nothing outside the range changes")
    func equivalence() throws {
        var random = SplitMix64(seed: 20_261_127)
        for index in 0..<200 {
            let key = random.bytes(16), iv = random.bytes(16)
            let blocks = index < 12 ? index : Int.random(in: 0...300, using: &random)  // 4-block runs and their remainders
            let lead = Int.random(in: 0...17, using: &random), tail = Int.random(in: 0...9, using: &random)
            let buffer = random.bytes(lead + blocks * 16 + tail)
            let range = lead..<(lead + blocks * 16)
            for encrypt in [true, false] {
                let (fast, portable) = try Self.both(buffer, range, key: key, iv: iv, encrypt: encrypt)
                #expect(fast == portable, "\(blocks) blocks, encrypt \(encrypt)")
                #expect(fast[..<lead] == buffer[..<lead] && fast[range.upperBound...] == buffer[range.upperBound...])
            }
        }
    }

    @Test("a segment encrypted in place in a larger pooled buffer: padded, cut to the segment, the same as a copy's; partial blocks and bad IVs refused")
    func segmentsInPlace() throws {
        let cipher = try SegmentCipher(key: SecretBytes(Array(0x10..<0x20)))
        let iv = [UInt8](repeating: 7, count: 16)
        for count in [0, 1, 16, 188 * 7, 65_536 + 3] {
            let segment = SecureRandom.bytes(count)
            var pooled = segment + [UInt8](repeating: 0xEE, count: 4096)
            let length = try cipher.encrypt(inPlace: &pooled, count: count, iv: iv)
            #expect(length == SegmentCipher.encryptedLength(count) && pooled.count == length)
            #expect(pooled == (try cipher.encrypt(segment, iv: iv)))
            #expect(try cipher.decrypt(pooled, iv: iv) == segment)
        }
        var bytes = [UInt8](repeating: 0, count: 40)
        let key = SymmetricKey(size: .bits128)
        #expect(throws: ProtectionError.self) {
            try BlockCipher.inPlace(&bytes) { (buffer) throws(ProtectionError) in try BlockCipher.cbc(buffer, 0..<24, key: key, iv: iv, encrypt: true) }
        }
        #expect(throws: ProtectionError.self) {
            try BlockCipher.inPlace(&bytes) { (buffer) throws(ProtectionError) in try BlockCipher.cbc(buffer, 0..<16, key: key, iv: [1], encrypt: false) }
        }
        #expect(throws: ProtectionError.self) { _ = try cipher.encrypt(inPlace: &bytes, count: 41, iv: iv) }
    }
    @Test("segments encrypted four at a time, one IV each, of any lengths (a batch of 1 to 9, lanes ending at different blocks): each the same as alone")
    func lanes() throws {
        let cipher = try SegmentCipher(key: SecretBytes(Array(0x30..<0x40)))
        var random = SplitMix64(seed: 27_112_026)
        for count in 1...9 {
            let clear = (0..<count).map { _ in random.bytes(Int.random(in: 0...5_000, using: &random)) }
            let ivs = (0..<count).map { _ in random.bytes(16) }
            var batch = clear
            try cipher.encrypt(inPlace: &batch, ivs: ivs)
            for index in 0..<count {
                #expect(batch[index] == (try cipher.encrypt(clear[index], iv: ivs[index])), "segment \(index) of \(count)")
            }
        }
        var one = [[UInt8](repeating: 1, count: 32)]
        #expect(throws: ProtectionError.self) { try cipher.encrypt(inPlace: &one, ivs: []) }
    }
}
