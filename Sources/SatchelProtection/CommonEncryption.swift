import Crypto
import SatchelBytes
import SatchelMedia

/// ISO/IEC 23001-7 Common Encryption of fMP4 samples: 'cenc' (AES-CTR) and 'cbcs' (AES-CBC, 1:9 pattern).
public struct CommonEncryption: Sendable {
    /// The protection scheme.
    public enum Scheme: String, Sendable, Codable {
        case cenc, cbcs
        /// The scheme as a four-character code.
        public var fourCC: FourCC { FourCC(rawValue) }
    }

    /// The scheme.
    public let scheme: Scheme
    private let key: SymmetricKey
    private let constantIV: [UInt8]

    /// Bytes kept clear at the start of every video slice NAL unit (NAL header and slice header):
    /// the length prefix plus 32 bytes, which covers the slice headers encoders produce.
    static let sliceLeader = 32

    /// A transform for `scheme` with the content key; `iv` is the constant IV for cbcs.
    public init(scheme: Scheme, key: SecretBytes, iv: [UInt8]) throws(ProtectionError) {
        guard key.count == 16 else { throw .invalidLength(what: "content key", expected: 16, actual: key.count) }
        guard iv.count == 16 else { throw .invalidLength(what: "IV", expected: 16, actual: iv.count) }
        self.scheme = scheme
        self.key = SymmetricKey(data: key.bytes)
        self.constantIV = iv
    }

    /// The tenc / senc settings for a track of `kind`.
    public func protection(keyID: KeyID, kind: MediaKind, psshBoxes: [[UInt8]]) -> FMP4Protection {
        switch scheme {
        case .cenc:
            return FMP4Protection(scheme: scheme.fourCC, keyID: keyID.bytes, perSampleIVSize: 8, psshBoxes: psshBoxes)
        case .cbcs:
            return FMP4Protection(scheme: scheme.fourCC, keyID: keyID.bytes, perSampleIVSize: 0, constantIV: constantIV,
                                  cryptByteBlock: kind == .video ? 1 : 0, skipByteBlock: kind == .video ? 9 : 0, psshBoxes: psshBoxes)
        }
    }

    /// The subsample map of a video sample: length prefixes, NAL headers, slice headers and
    /// non-slice NAL units clear; slice data protected in whole 16-byte blocks.
    ///
    /// With an H.264 `sliceContext` (from the track's SPS/PPS) the clear part of each slice is
    /// exactly its NAL header and slice header; otherwise, or when a header cannot be parsed, a
    /// conservative leader of `sliceLeader` bytes stays clear.
    public static func videoSubsamples(_ sample: ArraySlice<UInt8>, codec: MediaCodec, lengthSize: Int = 4,
                                       sliceContext: H264SliceContext? = nil) throws(ProtectionError) -> [Subsample] {
        let units: [ArraySlice<UInt8>]
        do { units = try NALUnit.splitLengthPrefixed(sample, lengthSize: lengthSize) } catch { throw .malformed("video sample: \(error)") }
        var subsamples: [Subsample] = []
        var clear = 0
        for unit in units {
            clear += lengthSize
            let isSlice: Bool
            if let header = unit.first {
                isSlice = codec == .hevc ? NALUnit.hevcType(header) < 32 : (1...5).contains(NALUnit.h264Type(header))
            } else {
                isSlice = false
            }
            let parsed = codec == .h264 ? sliceContext?.headerLength(ofSlice: unit) : nil
            let leader = parsed ?? (sliceLeader + (codec == .hevc ? 1 : 0))
            guard isSlice, unit.count > leader + 16 else {
                clear += unit.count
                continue
            }
            let protected = (unit.count - leader) / 16 * 16
            clear += unit.count - protected
            while clear > Int(UInt16.max) {
                subsamples.append(Subsample(clear: UInt16.max, protected: 0))
                clear -= Int(UInt16.max)
            }
            subsamples.append(Subsample(clear: UInt16(clear), protected: UInt32(protected)))
            clear = 0
        }
        if clear > 0 || subsamples.isEmpty {
            while clear > Int(UInt16.max) {
                subsamples.append(Subsample(clear: UInt16.max, protected: 0))
                clear -= Int(UInt16.max)
            }
            subsamples.append(Subsample(clear: UInt16(clear), protected: 0))
        }
        return subsamples
    }

    /// Encrypts a sample in place. `subsamples` empty means the whole sample is protected (audio).
    /// `iv` is the 8-byte per-sample IV for cenc (ignored for cbcs).
    public func encrypt(_ sample: inout [UInt8], subsamples: [Subsample], iv: [UInt8], isVideo: Bool) throws(ProtectionError) {
        try transform(&sample, sample.indices, subsamples: subsamples, iv: iv, isVideo: isVideo, encrypt: true)
    }

    /// Encrypts the sample that lies at `range` of `buffer` (a segment being written), in place.
    public func encrypt(_ buffer: inout [UInt8], sampleAt range: Range<Int>, subsamples: [Subsample], iv: [UInt8], isVideo: Bool) throws(ProtectionError) {
        try transform(&buffer, range, subsamples: subsamples, iv: iv, isVideo: isVideo, encrypt: true)
    }

    /// Decrypts a sample in place.
    public func decrypt(_ sample: inout [UInt8], subsamples: [Subsample], iv: [UInt8], isVideo: Bool) throws(ProtectionError) {
        try transform(&sample, sample.indices, subsamples: subsamples, iv: iv, isVideo: isVideo, encrypt: false)
    }

    /// Decrypts the sample that lies at `range` of `buffer` (a segment being read), in place.
    public func decrypt(_ buffer: inout [UInt8], sampleAt range: Range<Int>, subsamples: [Subsample], iv: [UInt8], isVideo: Bool) throws(ProtectionError) {
        try transform(&buffer, range, subsamples: subsamples, iv: iv, isVideo: isVideo, encrypt: false)
    }

    /// Decrypts the sample that lies at `range` of `buffer` (a stretch of a segment being served), in place.
    public func decrypt(_ buffer: UnsafeMutableRawBufferPointer, sampleAt range: Range<Int>, subsamples: [Subsample], iv: [UInt8],
                        isVideo: Bool) throws(ProtectionError) {
        try transform(buffer, range, subsamples: subsamples, iv: iv, isVideo: isVideo, encrypt: false)
    }

    private func transform(_ bytes: inout [UInt8], _ sample: Range<Int>, subsamples: [Subsample], iv: [UInt8], isVideo: Bool,
                           encrypt: Bool) throws(ProtectionError) {
        try BlockCipher.inPlace(&bytes) { (buffer) throws(ProtectionError) in
            try transform(buffer, sample, subsamples: subsamples, iv: iv, isVideo: isVideo, encrypt: encrypt)
        }
    }

    private func transform(_ buffer: UnsafeMutableRawBufferPointer, _ sample: Range<Int>, subsamples: [Subsample], iv: [UInt8], isVideo: Bool,
                           encrypt: Bool) throws(ProtectionError) {
        guard sample.lowerBound >= 0, sample.upperBound <= buffer.count else {
            throw .malformed("sample at \(sample) outside a \(buffer.count)-byte buffer")
        }
        // Protected ranges of the sample, as positions in the buffer.
        var ranges: [Range<Int>] = []
        if subsamples.isEmpty {
            ranges = [sample]
        } else {
            var position = sample.lowerBound
            for sub in subsamples {
                position += Int(sub.clear)
                let end = position + Int(sub.protected)
                guard end <= sample.upperBound else {
                    throw .malformed("subsamples cover \(end - sample.lowerBound) bytes of a \(sample.count)-byte sample")
                }
                if sub.protected > 0 { ranges.append(position..<end) }
                position = end
            }
            guard position == sample.upperBound else {
                throw .malformed("subsamples cover \(position - sample.lowerBound) bytes of a \(sample.count)-byte sample")
            }
        }
        switch scheme {
        case .cenc:
            guard iv.count == 8 || iv.count == 16 else { throw .invalidLength(what: "per-sample IV", expected: 8, actual: iv.count) }
            var counter = iv
            if iv.count == 8 { counter.append(contentsOf: Self.zeroHalf) }
            if ranges.dropLast().allSatisfy({ $0.count % 16 == 0 }) {
                // Each range where it lies, the counter carried from one to the next.
                for range in ranges {
                    try BlockCipher.ctr(buffer, range, key: key, counter: counter)
                    counter = BlockCipher.advance(counter, by: range.count / 16)
                }
            } else {
                // A range that ends inside a block continues its keystream in the next one.
                var gathered = Gather.collect(UnsafeRawBufferPointer(buffer), ranges)
                try BlockCipher.ctr(&gathered, gathered.indices, key: key, counter: counter)
                Gather.scatter(gathered, into: buffer, ranges)
            }
        case .cbcs:
            // Pattern 1:9 for video; every whole block for audio. CBC restarts with the constant IV per subsample.
            for range in ranges {
                let blocks = range.count / 16
                guard blocks > 0 else { continue }
                if !isVideo {
                    try BlockCipher.cbc(buffer, range.lowerBound..<(range.lowerBound + blocks * 16), key: key, iv: constantIV, encrypt: encrypt)
                    continue
                }
                // The first block of every ten, gathered so that one CBC call chains them.
                let pieces = (blocks + 9) / 10
                var gathered = Gather.blocks(UnsafeRawBufferPointer(buffer), from: range.lowerBound, count: pieces, every: 160)
                try BlockCipher.cbc(&gathered, gathered.indices, key: key, iv: constantIV, encrypt: encrypt)
                Gather.scatterBlocks(gathered, into: buffer, from: range.lowerBound, every: 160)
            }
        }
    }
}

extension CommonEncryption {
    /// The low half of a counter block that starts from an 8-byte IV.
    static let zeroHalf = [UInt8](repeating: 0, count: 8)
}

/// Copies scattered byte ranges into one buffer and back, so one cipher call covers them.
enum Gather {
    /// The bytes of `ranges` of `source` (each inside it), concatenated.
    static func collect(_ source: UnsafeRawBufferPointer, _ ranges: [Range<Int>]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(ranges.reduce(0) { $0 + $1.count })
        for range in ranges where range.lowerBound >= 0 && range.upperBound <= source.count {
            out += UnsafeRawBufferPointer(rebasing: source[range])
        }
        return out
    }

    /// `count` 16-byte blocks of `source`, the first at `start` and each `stride` bytes after the one before,
    /// concatenated (cbcs's pattern: the first block of every ten). Blocks that would end past `source` are left out.
    static func blocks(_ source: UnsafeRawBufferPointer, from start: Int, count: Int, every stride: Int) -> [UInt8] {
        let available = start >= 0 && start + 16 <= source.count ? (source.count - start - 16) / stride + 1 : 0
        let taken = max(0, min(count, available))
        return [UInt8](unsafeUninitializedCapacity: taken * 16) { out, initialized in
            initialized = 0
            guard let from = source.baseAddress, let to = out.baseAddress else { return }
            for index in 0..<taken {
                let block = UnsafeRawPointer(from).loadUnaligned(fromByteOffset: start + index * stride, as: SIMD16<UInt8>.self)
                UnsafeMutableRawPointer(to).storeBytes(of: block, toByteOffset: index * 16, as: SIMD16<UInt8>.self)
            }
            initialized = taken * 16
        }
    }

    /// Writes the blocks of `gathered` back where ``blocks(_:from:count:every:)`` took them.
    static func scatterBlocks(_ gathered: [UInt8], into target: UnsafeMutableRawBufferPointer, from start: Int, every stride: Int) {
        gathered.withUnsafeBytes { source in
            guard let from = source.baseAddress, let to = target.baseAddress, start >= 0 else { return }
            for index in 0..<(source.count / 16) where start + index * stride + 16 <= target.count {
                let block = from.loadUnaligned(fromByteOffset: index * 16, as: SIMD16<UInt8>.self)
                to.storeBytes(of: block, toByteOffset: start + index * stride, as: SIMD16<UInt8>.self)
            }
        }
    }

    /// Writes `gathered` back over `ranges` of `target`.
    static func scatter(_ gathered: [UInt8], into target: UnsafeMutableRawBufferPointer, _ ranges: [Range<Int>]) {
        var offset = 0
        for range in ranges where range.lowerBound >= 0 && range.upperBound <= target.count && offset + range.count <= gathered.count {
            gathered[offset..<(offset + range.count)].withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: target[range]).copyMemory(from: $0) }
            offset += range.count
        }
    }
}
