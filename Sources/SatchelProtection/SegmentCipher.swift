import Crypto
import Foundation
import SatchelBytes

/// HLS METHOD=AES-128: the whole segment AES-128-CBC encrypted with PKCS#7 padding.
public struct SegmentCipher: Sendable {
    private let key: SymmetricKey

    /// A cipher for `key` (16 bytes).
    public init(key: SecretBytes) throws(ProtectionError) {
        guard key.count == 16 else { throw .invalidLength(what: "content key", expected: 16, actual: key.count) }
        self.key = SymmetricKey(data: key.bytes)
    }

    /// Encrypts a whole segment (PKCS#7 padding added).
    public func encrypt(_ segment: [UInt8], iv: [UInt8]) throws(ProtectionError) -> [UInt8] {
        var bytes = segment
        _ = try encrypt(inPlace: &bytes, count: segment.count, iv: iv)
        return bytes
    }

    /// Encrypts the first `count` bytes of `bytes` as a whole segment, in place (a buffer may hold more: it is cut to
    /// the segment, then padded); answers the encrypted length, ``encryptedLength(_:)`` of `count`.
    public func encrypt(inPlace bytes: inout [UInt8], count: Int, iv: [UInt8]) throws(ProtectionError) -> Int {
        guard iv.count == 16 else { throw .invalidLength(what: "IV", expected: 16, actual: iv.count) }
        return try BlockCipher.cbcEncryptPadded(&bytes, count: count, key: key, iv: iv)
    }

    /// Encrypts whole segments in place, each with its own IV (`ivs`, one per segment), several at once where the
    /// processor allows it: segments are independent where CBC chains every block of one segment.
    public func encrypt(inPlace segments: inout [[UInt8]], ivs: [[UInt8]]) throws(ProtectionError) {
        try BlockCipher.cbcEncryptPadded(segments: &segments, key: key, ivs: ivs)
    }

    /// The length of a segment of `clear` bytes once encrypted: PKCS#7 pads it to the next whole block (a whole
    /// block more when it is one already).
    public static func encryptedLength(_ clear: Int) -> Int {
        clear + 16 - clear % 16
    }

    /// Decrypts a whole segment and removes the padding.
    public func decrypt(_ segment: [UInt8], iv: [UInt8]) throws(ProtectionError) -> [UInt8] {
        guard iv.count == 16 else { throw .invalidLength(what: "IV", expected: 16, actual: iv.count) }
        return try BlockCipher.cbcDecrypt(segment, key: key, iv: iv, padding: true)
    }

    /// Decrypts whole blocks of a segment, padding left in: a stretch from anywhere in the segment, `iv` being
    /// the cipher block before it (or the segment's IV for the first). This is how a segment is decrypted as it
    /// streams, and how a byte range of it is decrypted without the blocks before.
    public func decryptBlocks(_ blocks: [UInt8], iv: [UInt8]) throws(ProtectionError) -> [UInt8] {
        guard iv.count == 16 else { throw .invalidLength(what: "IV", expected: 16, actual: iv.count) }
        return try BlockCipher.cbcDecrypt(blocks, key: key, iv: iv)
    }

    /// The same over any bytes (a network or file buffer), without copying them first.
    public func decryptBlocks<D: DataProtocol>(_ blocks: D, iv: [UInt8]) throws(ProtectionError) -> Data {
        guard iv.count == 16 else { throw .invalidLength(what: "IV", expected: 16, actual: iv.count) }
        return try BlockCipher.cbc(blocks, key: key, iv: iv, encrypt: false)
    }

    /// The same in place: `blocks` (whole blocks) decrypted where they lie.
    public func decryptBlocks(in blocks: UnsafeMutableRawBufferPointer, iv: [UInt8]) throws(ProtectionError) {
        guard iv.count == 16 else { throw .invalidLength(what: "IV", expected: 16, actual: iv.count) }
        try BlockCipher.cbc(blocks, 0..<blocks.count, key: key, iv: iv, encrypt: false)
    }

    /// The PKCS#7 padding length (1–16) of a segment whose last cipher block is `last`, `previous` being the
    /// block before it (or the IV for a one-block segment): the clear size is the segment's minus this.
    public func paddingLength(last: [UInt8], previous: [UInt8]) throws(ProtectionError) -> Int {
        guard last.count == 16 else { throw .invalidLength(what: "last block", expected: 16, actual: last.count) }
        let block = try decryptBlocks(last, iv: previous)
        guard let count = block.last, (1...16).contains(count), block.suffix(Int(count)).allSatisfy({ $0 == count }) else {
            throw .malformed("the segment's padding is not PKCS#7 (wrong key or IV?)")
        }
        return Int(count)
    }

    /// The IV HLS implies for a segment without an IV attribute: its media sequence number, big-endian.
    public static func sequenceIV(_ sequenceNumber: UInt64) -> [UInt8] {
        var writer = ByteWriter(capacity: 16)
        writer.writeUInt64(0)
        writer.writeUInt64(sequenceNumber)
        return writer.bytes
    }
}
