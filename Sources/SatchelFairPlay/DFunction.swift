import SatchelBytes

/// The D function: derives DASk, the key of the [SK...R1] block, from R2.
public protocol DFunction: Sendable {
    /// Returns the 16-byte DASk for this SPC's R2.
    func derivedApplicationSecret(r2: [UInt8]) throws(FairPlayError) -> SecretBytes
}

/// The development-package D function: a fixed DASk for every SPC.
///
/// Apple's development credentials and test vectors use
/// `d87ce7a26081de2e8eb8acef3a6dc179`; never use this mode in production.
public struct DevelopmentDFunction: DFunction {
    private let dask: SecretBytes

    /// A D function that always answers `dask` (16 bytes).
    public init(dask: SecretBytes) throws(FairPlayError) {
        guard dask.count == 16 else { throw .invalidLength(what: "DASk", expected: 16, actual: dask.count) }
        self.dask = dask
    }

    public func derivedApplicationSecret(r2: [UInt8]) throws(FairPlayError) -> SecretBytes { dask }
}

/// The production D function: DASk = AES-128-ECB(ASk, DHash(R2)), with ASk from
/// Apple's FPS Deployment Package.
public struct ProductionDFunction: DFunction {
    private let ask: SecretBytes

    /// A D function keyed with the 16-byte Application Secret key.
    public init(ask: SecretBytes) throws(FairPlayError) {
        guard ask.count == 16 else { throw .invalidLength(what: "ASk", expected: 16, actual: ask.count) }
        self.ask = ask
    }

    public func derivedApplicationSecret(r2: [UInt8]) throws(FairPlayError) -> SecretBytes {
        SecretBytes(try FairPlayCrypto.ecbEncryptBlock(try Self.dHash(r2), key: ask.bytes))
    }

    /// DHash(R2): a 64-byte block of R2, 0x80 and zeros, two 32-bit checksums folded by
    /// sixteen rounds each and stored little-endian in bytes 56..63, then SHA-1, first 16 bytes.
    public static func dHash(_ r2: [UInt8]) throws(FairPlayError) -> [UInt8] {
        guard r2.count < 56 else { throw .invalidTLLVValue(.r2, reason: "R2 is \(r2.count) bytes, at most 55 allowed") }
        var block = [UInt8](repeating: 0, count: 64)
        block.replaceSubrange(0..<r2.count, with: r2)
        block[r2.count] = 0x80
        var words: [UInt32] = []
        var reader = ByteReader(Array(block[0..<56]))
        for _ in 0..<14 { words.append((try? reader.readUInt32()) ?? 0) }
        var a = words[0..<7].reduce(UInt32(0), &+)
        var b = words[7..<14].reduce(UInt32(0), &+)
        a = fold(a)
        b = fold(b)
        for index in 0..<4 {
            block[56 + index] = UInt8(truncatingIfNeeded: a >> (8 * UInt32(index)))
            block[60 + index] = UInt8(truncatingIfNeeded: b >> (8 * UInt32(index)))
        }
        return Array(FairPlayCrypto.sha1(block).prefix(16))
    }

    private static func fold(_ start: UInt32) -> UInt32 {
        var value = start
        for _ in 0..<16 {
            if value & 1 == 1 {
                value >>= 1
            } else {
                value = (3 &* value &+ 1) % 813_416_437
            }
        }
        return value
    }
}
