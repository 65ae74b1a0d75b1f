import Crypto
import SatchelBytes
import SatchelMedia

/// Apple's MPEG-2 Stream Encryption Format for HLS (METHOD=SAMPLE-AES in MPEG-TS).
///
/// H.264: NAL types 1 and 5 only; the NAL header and 31 bytes stay clear, then one 16-byte
/// block in every 160 is encrypted (AES-128-CBC chained through the encrypted blocks and
/// restarting at every NAL), the last 1-16 bytes stay clear, and emulation prevention is applied
/// to the result. AAC (ADTS): header and 16 bytes clear, then every whole block encrypted; AC-3 and E-AC-3: each
/// syncframe's first 16 bytes clear, then every whole block encrypted.
public struct SampleAES: Sendable {
    private let key: SymmetricKey
    private let iv: [UInt8]

    /// A transform with the content key and IV.
    public init(key: SecretBytes, iv: [UInt8]) throws(ProtectionError) {
        guard key.count == 16 else { throw .invalidLength(what: "content key", expected: 16, actual: key.count) }
        guard iv.count == 16 else { throw .invalidLength(what: "IV", expected: 16, actual: iv.count) }
        self.key = SymmetricKey(data: key.bytes)
        self.iv = iv
    }

    /// The encrypted 16-byte blocks of a NAL of `length` bytes: the first at byte 32, then one in every ten
    /// (16 encrypted, 144 clear), each followed by more than 16 bytes.
    static func videoBlockCount(length: Int) -> Int {
        length > 48 ? (length - 49) / 160 + 1 : 0
    }

    /// Encrypts one H.264 NAL unit (as it appears in the stream) and re-applies emulation prevention.
    public func encryptVideoNAL<C: Collection>(_ nal: C) throws(ProtectionError) -> [UInt8] where C.Element == UInt8 {
        var bytes = Array(nal)
        guard let header = bytes.first, [1, 5].contains(NALUnit.h264Type(header)) else { return bytes }
        let blocks = Self.videoBlockCount(length: bytes.count)
        guard blocks > 0 else { return bytes }
        try transformBlocks(&bytes, from: 32, count: blocks, every: 160, encrypt: true)
        return NALUnit.addEmulationPrevention(bytes)
    }

    /// Decrypts one protected NAL unit: removes one level of emulation prevention, then decrypts.
    /// Like ffmpeg's decryptor, slice NALs of 48 bytes or fewer in the stream are left as they are
    /// (the encryptor never touches them).
    public func decryptVideoNAL<C: Collection>(_ nal: C) throws(ProtectionError) -> [UInt8] where C.Element == UInt8 {
        guard nal.count > 48, let header = nal.first, [1, 5].contains(NALUnit.h264Type(header)) else { return Array(nal) }
        var bytes = NALUnit.removeEmulationPrevention(nal)
        let blocks = Self.videoBlockCount(length: bytes.count)
        guard blocks > 0 else { return Array(nal) }
        try transformBlocks(&bytes, from: 32, count: blocks, every: 160, encrypt: false)
        return bytes
    }

    /// Encrypts the payload of one ADTS frame (header included in `frame`, left clear).
    public func encryptAudioFrame(_ frame: [UInt8], headerLength: Int) throws(ProtectionError) -> [UInt8] {
        try audio(frame, headerLength: headerLength, encrypt: true)
    }

    /// Decrypts one ADTS frame.
    public func decryptAudioFrame(_ frame: [UInt8], headerLength: Int) throws(ProtectionError) -> [UInt8] {
        try audio(frame, headerLength: headerLength, encrypt: false)
    }

    private func audio(_ frame: [UInt8], headerLength: Int, encrypt: Bool) throws(ProtectionError) -> [UInt8] {
        var bytes = frame
        let start = headerLength + 16
        guard bytes.count - start >= 16 else { return bytes }
        let blocks = (bytes.count - start) / 16
        try transformBlocks(&bytes, from: start, count: blocks, every: 16, encrypt: encrypt)
        return bytes
    }

    /// Decrypts, in place, the protected NAL unit at `nal` of `bytes` when it holds no emulation prevention byte
    /// (`escaped` false, as ``NALUnit/annexBUnits(_:)`` finds; the clear NAL is then as long as the protected one) and
    /// gives the 16-byte blocks it changed; nil, nothing touched, when it holds one (``decryptVideoNAL(_:)`` makes it
    /// anew). A NAL the encryptor leaves alone gives no blocks.
    func decryptVideoNAL(in bytes: inout [UInt8], at nal: Range<Int>, escaped: Bool) throws(ProtectionError) -> (first: Int, count: Int)? {
        guard nal.count > 48, [1, 5].contains(NALUnit.h264Type(bytes[nal.lowerBound])) else { return (nal.lowerBound, 0) }
        guard !escaped else { return nil }
        let blocks = Self.videoBlockCount(length: nal.count)
        try transformBlocks(&bytes, from: nal.lowerBound + 32, count: blocks, every: 160, encrypt: false)
        return (nal.lowerBound + 32, blocks)
    }

    /// Decrypts, in place, the ADTS frame at `frame` of `bytes` (its header `headerLength` bytes long) and gives the
    /// bytes it changed.
    func decryptAudioFrame(in bytes: inout [UInt8], at frame: Range<Int>, headerLength: Int) throws(ProtectionError) -> Range<Int> {
        let start = frame.lowerBound + headerLength + 16
        guard frame.upperBound - start >= 16 else { return start..<start }
        let blocks = (frame.upperBound - start) / 16
        try transformBlocks(&bytes, from: start, count: blocks, every: 16, encrypt: false)
        return start..<(start + blocks * 16)
    }

    /// Gathers `count` blocks, the first at `start` and one every `stride` bytes, runs one CBC call over them, and
    /// scatters the result back.
    private func transformBlocks(_ bytes: inout [UInt8], from start: Int, count: Int, every stride: Int, encrypt: Bool) throws(ProtectionError) {
        let gathered = bytes.withUnsafeBytes { Gather.blocks($0, from: start, count: count, every: stride) }
        let result = encrypt ? try BlockCipher.cbcEncrypt(gathered, key: key, iv: iv) : try BlockCipher.cbcDecrypt(gathered, key: key, iv: iv)
        bytes.withUnsafeMutableBytes { Gather.scatterBlocks(result, into: $0, from: start, every: stride) }
    }

    /// PMT settings for SAMPLE-AES streams (stream types 0xDB / 0xCF / 0xC1 / 0xC2 with their descriptors). The audio
    /// setup information carries AAC's AudioSpecificConfig, E-AC-3's `dec3` contents, and for AC-3 the first 10
    /// bytes of a syncframe (`firstFrame`), as Apple's format and Shaka Packager write them.
    public static func tsStream(for track: MediaTrack, base: TSStream, firstFrame: [UInt8] = []) -> TSStream {
        var stream = base
        switch track.codec {
        case .h264:
            stream.streamType = 0xDB
            stream.descriptors = TSDescriptor.privateDataIndicator("zavc")
        case .aac, .ac3, .eac3:
            let (type, indicator, audioType): (UInt8, FourCC, FourCC) = switch track.codec {
            case .ac3: (0xC1, "ac3d", "zac3")
            case .eac3: (0xC2, "ec3d", "zec3")
            default: (0xCF, "aacd", "zaac")
            }
            stream.streamType = type
            var setup = audioType.bytes + [0, 0, 1]  // priming 0, version 1
            let data = track.codec == .ac3 ? Array(firstFrame.prefix(10)) : Array(track.codecConfiguration.prefix(255))
            setup.append(UInt8(data.count))
            setup += data
            stream.descriptors = TSDescriptor.privateDataIndicator(indicator) + TSDescriptor.registration("apad", additional: setup)
        case .hevc:
            break
        }
        return stream
    }
}
