import CSatchelCrypto
import Crypto
import CryptoExtras
import Foundation
import SatchelBytes

/// AES-128 primitives for content protection; failures become ``ProtectionError`` values
/// that never name the key. The in-place forms read a range of a buffer and write the result
/// over it, so a packager encrypts samples where they already lie in the segment it writes.
package enum BlockCipher {
    /// AES-CBC over `data` (whole blocks, or any length with `padding` when encrypting): the one AES-CBC of Satchel
    /// (content protection and FairPlay's own). A failure names the operation, never the key.
    package static func cbc<D: DataProtocol>(_ data: D, key: SymmetricKey, iv: [UInt8], encrypt: Bool, padding: Bool = false) throws(ProtectionError) -> Data {
        if data.isEmpty && !padding { return Data() }
        if !encrypt || !padding {
            guard data.count % 16 == 0 else { throw .malformed("AES-CBC data of \(data.count) bytes is not whole blocks") }
        }
        do {
            let vector = try AES._CBC.IV(ivBytes: iv)
            return encrypt ? try AES._CBC.encrypt(data, using: key, iv: vector, noPadding: !padding)
                : try AES._CBC.decrypt(data, using: key, iv: vector, noPadding: !padding)
        } catch {
            if !encrypt, padding { throw .malformed("bad PKCS#7 padding (wrong key or IV, or damaged data)") }
            throw .cryptoFailure(encrypt ? "AES-CBC encryption" : "AES-CBC decryption")
        }
    }

    static func cbcEncrypt(_ data: [UInt8], key: SymmetricKey, iv: [UInt8], padding: Bool = false) throws(ProtectionError) -> [UInt8] {
        Array(try cbc(data, key: key, iv: iv, encrypt: true, padding: padding))
    }

    static func cbcDecrypt(_ data: [UInt8], key: SymmetricKey, iv: [UInt8], padding: Bool = false) throws(ProtectionError) -> [UInt8] {
        if padding, data.isEmpty { throw .malformed("AES-CBC data of 0 bytes is not whole blocks") }
        return Array(try cbc(data, key: key, iv: iv, encrypt: false, padding: padding))
    }

    /// AES-CBC without padding over `range` of `bytes` (whole blocks), in place (with the processor's AES
    /// instructions where it has them: no per-call cipher context, for the small fields of a FairPlay SPC and CKC).
    package static func cbc(_ bytes: inout [UInt8], _ range: Range<Int>, key: SymmetricKey, iv: [UInt8], encrypt: Bool) throws(ProtectionError) {
        try inPlace(&bytes) { (buffer) throws(ProtectionError) in try cbc(buffer, range, key: key, iv: iv, encrypt: encrypt) }
    }

    /// AES-CBC without padding over `range` of `buffer` (whole blocks), in place: with the processor's AES instructions
    /// where it has them (`CSatchelCrypto`, no copy), else through swift-crypto (`accelerated` false: always swift-crypto).
    static func cbc(_ buffer: UnsafeMutableRawBufferPointer, _ range: Range<Int>, key: SymmetricKey, iv: [UInt8], encrypt: Bool,
                    accelerated: Bool = true) throws(ProtectionError) {
        guard range.lowerBound >= 0, range.upperBound <= buffer.count else { throw .malformed("AES-CBC range \(range) outside \(buffer.count) bytes") }
        guard range.count % 16 == 0 else { throw .malformed("AES-CBC data of \(range.count) bytes is not whole blocks") }
        guard iv.count == 16 else { throw .invalidLength(what: "AES-CBC IV", expected: 16, actual: iv.count) }
        if range.isEmpty { return }
        if accelerated, key.bitCount == 128, let base = buffer.baseAddress, satchel_aes128_ctr_available() != 0 {
            let status = key.withUnsafeBytes { key in
                iv.withUnsafeBufferPointer { iv in
                    satchel_aes128_cbc(key.baseAddress?.assumingMemoryBound(to: UInt8.self), iv.baseAddress,
                                       base.assumingMemoryBound(to: UInt8.self) + range.lowerBound, range.count, encrypt ? 1 : 0)
                }
            }
            guard status == 0 else { throw .cryptoFailure(encrypt ? "AES-CBC encryption" : "AES-CBC decryption") }
            return
        }
        let result = try cbc(UnsafeRawBufferPointer(rebasing: buffer[range]), key: key, iv: iv, encrypt: encrypt)
        try overwrite(buffer, range, with: result)
    }

    /// Whole segments encrypted in place, each as ``cbcEncryptPadded(_:count:key:iv:)`` does with its own IV (`ivs`, one
    /// per segment), four at a time through the processor's AES unit (`CSatchelCrypto`'s lanes: four chains take about
    /// the time of one), else one after another.
    static func cbcEncryptPadded(segments: inout [[UInt8]], key: SymmetricKey, ivs: [[UInt8]]) throws(ProtectionError) {
        guard ivs.count == segments.count, ivs.allSatisfy({ $0.count == 16 }) else { throw .invalidLength(what: "AES-CBC IV", expected: 16, actual: 0) }
        guard key.bitCount == 128, satchel_aes128_ctr_available() != 0 else {
            for index in segments.indices { _ = try cbcEncryptPadded(&segments[index], count: segments[index].count, key: key, iv: ivs[index]) }
            return
        }
        for index in segments.indices {
            let pad = 16 - segments[index].count % 16
            segments[index].append(contentsOf: repeatElement(UInt8(pad), count: pad))
        }
        for start in stride(from: 0, to: segments.count, by: 4) {
            let lanes = min(4, segments.count - start)
            // Moved out (not copied) into four locals, so that each has one pointer at a time.
            var l0: [UInt8] = [], l1: [UInt8] = [], l2: [UInt8] = [], l3: [UInt8] = []
            swap(&l0, &segments[start])
            if lanes > 1 { swap(&l1, &segments[start + 1]) }
            if lanes > 2 { swap(&l2, &segments[start + 2]) }
            if lanes > 3 { swap(&l3, &segments[start + 3]) }
            let lengths = [l0.count, l1.count, l2.count, l3.count]
            let vectors = (0..<4).map { $0 < lanes ? ivs[start + $0] : [UInt8](repeating: 0, count: 16) }
            let status = key.withUnsafeBytes { key in
                l0.withUnsafeMutableBufferPointer { p0 in l1.withUnsafeMutableBufferPointer { p1 in
                    l2.withUnsafeMutableBufferPointer { p2 in l3.withUnsafeMutableBufferPointer { p3 in
                        vectors[0].withUnsafeBufferPointer { v0 in vectors[1].withUnsafeBufferPointer { v1 in
                            vectors[2].withUnsafeBufferPointer { v2 in vectors[3].withUnsafeBufferPointer { v3 in
                                let data = [p0.baseAddress, p1.baseAddress, p2.baseAddress, p3.baseAddress]
                                let ivPointers = [v0.baseAddress, v1.baseAddress, v2.baseAddress, v3.baseAddress].map { UnsafePointer($0) }
                                return satchel_aes128_cbc_encrypt_lanes(key.baseAddress?.assumingMemoryBound(to: UInt8.self), ivPointers, data,
                                                                         lengths, Int32(lanes))
                            } }
                        } }
                    } }
                } }
            }
            swap(&l0, &segments[start])
            if lanes > 1 { swap(&l1, &segments[start + 1]) }
            if lanes > 2 { swap(&l2, &segments[start + 2]) }
            if lanes > 3 { swap(&l3, &segments[start + 3]) }
            guard status == 0 else { throw .cryptoFailure("AES-CBC encryption") }
        }
    }

    /// A whole segment encrypted in place, as HLS AES-128 wants it: PKCS#7 padding appended (1 to 16 bytes), then
    /// AES-128-CBC over the first `count` bytes and the padding; `bytes` may hold more (a pooled buffer), which is
    /// dropped. Answers the encrypted length.
    static func cbcEncryptPadded(_ bytes: inout [UInt8], count: Int, key: SymmetricKey, iv: [UInt8]) throws(ProtectionError) -> Int {
        guard count >= 0, count <= bytes.count else { throw .malformed("AES-CBC length \(count) outside \(bytes.count) bytes") }
        let pad = 16 - count % 16
        bytes.removeSubrange(count...)
        bytes.append(contentsOf: repeatElement(UInt8(pad), count: pad))
        try cbc(&bytes, bytes.indices, key: key, iv: iv, encrypt: true)
        return bytes.count
    }

    /// AES-CTR over `range` of `bytes` with a 16-byte initial counter block, in place; encryption and
    /// decryption are the same.
    static func ctr(_ bytes: inout [UInt8], _ range: Range<Int>, key: SymmetricKey, counter: [UInt8]) throws(ProtectionError) {
        try inPlace(&bytes) { (buffer) throws(ProtectionError) in try ctr(buffer, range, key: key, counter: counter) }
    }

    /// AES-CTR over `range` of `buffer`, in place: with the processor's AES instructions where it has them
    /// (`CSatchelCrypto`, no copy), else through swift-crypto (`accelerated` false: always swift-crypto).
    static func ctr(_ buffer: UnsafeMutableRawBufferPointer, _ range: Range<Int>, key: SymmetricKey, counter: [UInt8],
                    accelerated: Bool = true) throws(ProtectionError) {
        guard range.lowerBound >= 0, range.upperBound <= buffer.count else { throw .malformed("AES-CTR range \(range) outside \(buffer.count) bytes") }
        guard counter.count == 16 else { throw .invalidLength(what: "AES-CTR counter block", expected: 16, actual: counter.count) }
        if range.isEmpty { return }
        if accelerated, key.bitCount == 128, let base = buffer.baseAddress, satchel_aes128_ctr_available() != 0 {
            let status = key.withUnsafeBytes { key in
                counter.withUnsafeBufferPointer { counter in
                    satchel_aes128_ctr_xor(key.baseAddress?.assumingMemoryBound(to: UInt8.self), counter.baseAddress,
                                           base.assumingMemoryBound(to: UInt8.self) + range.lowerBound, range.count)
                }
            }
            guard status == 0 else { throw .cryptoFailure("AES-CTR") }
            return
        }
        let result: Data
        do {
            result = try AES._CTR.encrypt(UnsafeRawBufferPointer(rebasing: buffer[range]), using: key, nonce: AES._CTR.Nonce(nonceBytes: counter))
        } catch {
            throw .cryptoFailure("AES-CTR")
        }
        try overwrite(buffer, range, with: result)
    }

    /// AES-CTR of a whole buffer.
    static func ctr(_ data: [UInt8], key: SymmetricKey, counter: [UInt8]) throws(ProtectionError) -> [UInt8] {
        var bytes = data
        try ctr(&bytes, bytes.indices, key: key, counter: counter)
        return bytes
    }

    /// The counter block `blocks` blocks after `counter`, as AES-CTR counts: the 16 bytes as one
    /// big-endian number, wrapping.
    static func advance(_ counter: [UInt8], by blocks: Int) -> [UInt8] {
        var result = counter
        var carry = UInt64(clamping: blocks)
        var index = result.count - 1
        while carry > 0, index >= 0 {
            let sum = UInt64(result[index]) + (carry & 0xFF)
            result[index] = UInt8(truncatingIfNeeded: sum)
            carry = (carry >> 8) + (sum >> 8)
            index -= 1
        }
        return result
    }

    /// Runs `body` over the bytes of `bytes`, its typed error passed on.
    static func inPlace(_ bytes: inout [UInt8], _ body: (UnsafeMutableRawBufferPointer) throws(ProtectionError) -> Void) throws(ProtectionError) {
        var failure: ProtectionError?
        bytes.withUnsafeMutableBytes { buffer in
            do throws(ProtectionError) { try body(buffer) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    private static func overwrite(_ buffer: UnsafeMutableRawBufferPointer, _ range: Range<Int>, with result: Data) throws(ProtectionError) {
        guard result.count == range.count else { throw .cryptoFailure("AES returned \(result.count) bytes for \(range.count)") }
        // One memcpy: Data's own copyBytes(to:) walks its regions generically, at a fraction of the speed.
        result.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[range]).copyMemory(from: $0) }
    }
}
