import SatchelBytes
import SatchelMedia

/// Decrypts CENC ('cenc' / 'cbcs') fragmented MP4 media segments, given the init segment.
public struct FMP4Decryptor: Sendable {
    /// The track's protection settings, read from the init segment's 'tenc'.
    public let scheme: CommonEncryption.Scheme
    /// The default key ID.
    public let keyID: KeyID
    /// Per-sample IV size (0 with a constant IV).
    public let perSampleIVSize: Int
    /// The constant IV, if any.
    public let constantIV: [UInt8]?
    /// True for a video track (pattern encryption applies in cbcs).
    public let isVideo: Bool
    /// The sample entries (1-based, as `tfhd` names them) that are protected. A track with a clear lead has a clear
    /// entry beside the protected one, and the fragments of its first seconds name the clear one: they hold no
    /// encrypted sample.
    public let protectedEntries: Set<UInt32>
    /// The sample entry a fragment uses when its `tfhd` names none (the init segment's `trex`).
    public let defaultEntry: UInt32
    /// The size of a sample whose `trun` and `tfhd` give none (the init segment's `trex`; nil: none given).
    let defaultSampleSize: UInt32?
    /// The track these settings are of (0 when given directly).
    public let trackID: UInt32

    /// Settings given directly (a track without an init segment: a Smooth Streaming fragment's, from its manifest).
    public init(scheme: CommonEncryption.Scheme, keyID: KeyID, perSampleIVSize: Int, constantIV: [UInt8]? = nil, isVideo: Bool) {
        self.scheme = scheme
        self.keyID = keyID
        self.perSampleIVSize = perSampleIVSize
        self.constantIV = constantIV
        self.isVideo = isVideo
        protectedEntries = [1]
        defaultEntry = 1
        defaultSampleSize = nil
        trackID = 0
    }

    /// Reads the protection settings of the (single) track of `initSegment`: its protected sample entry (among
    /// clear ones, for a clear lead), and which entries are protected.
    public init(initSegment bytes: [UInt8]) throws(ProtectionError) {
        do {
            let top = try MP4Box.children(of: bytes, in: 0..<bytes.count)
            guard let moov = top.first("moov"), let trak = try moov.children(in: bytes).first("trak") else {
                throw ProtectionError.malformed("init segment has no sample entry")
            }
            try self.init(trak: trak, of: moov, in: bytes)
        } catch let error as ProtectionError {
            throw error
        } catch {
            throw .malformed("init segment: \(error)")
        }
    }

    /// Reads the protection settings of one `trak` of `moov` (boxes of `bytes`). PIFF's track encryption box (a
    /// `uuid` in `schi`, as a Smooth Streaming `.ismv` writes it) stands for `tenc`, its scheme for `cenc`.
    public init(trak: MP4Box, of moov: MP4Box, in bytes: [UInt8]) throws(ProtectionError) {
        do {
            trackID = try Self.trackID(of: trak, bytes)
            guard let mdia = try trak.children(in: bytes).first("mdia"),
                  let minf = try mdia.children(in: bytes).first("minf"),
                  let stbl = try minf.children(in: bytes).first("stbl"),
                  let stsd = try stbl.children(in: bytes).first("stsd") else { throw ProtectionError.malformed("init segment has no sample entry") }
            let entries = try stsd.children(in: bytes, skip: 8)
            guard !entries.isEmpty else { throw ProtectionError.malformed("init segment has no sample entry") }
            let protected = entries.indices.filter { entries[$0].type == "encv" || entries[$0].type == "enca" }
            guard let first = protected.first else { throw ProtectionError.malformed("track is not encrypted ('\(entries[0].type)')") }
            let entry = entries[first]
            protectedEntries = Set(protected.map { UInt32($0 + 1) })
            (defaultEntry, defaultSampleSize) = try FragmentSampleSizes.trackDefaults(moov, track: trackID, bytes)
            isVideo = entry.type == "encv"
            let skip = isVideo ? 78 : 28
            guard let sinf = try entry.children(in: bytes, skip: skip).first("sinf") else { throw ProtectionError.malformed("no 'sinf'") }
            let sinfChildren = try sinf.children(in: bytes)
            guard let schm = sinfChildren.first("schm"), let schi = sinfChildren.first("schi") else { throw ProtectionError.malformed("no 'schm' or 'schi'") }
            var (_, _, schmReader) = try schm.fullBoxReader(in: bytes)
            let type = FourCC(rawValue: try schmReader.readUInt32())
            let schiChildren = try schi.children(in: bytes)
            if let tenc = schiChildren.first("tenc") {
                guard let scheme = CommonEncryption.Scheme(rawValue: type.description) else { throw ProtectionError.malformed("scheme '\(type)'") }
                self.scheme = scheme
                var (_, _, reader) = try tenc.fullBoxReader(in: bytes)
                try reader.skip(2)
                _ = try reader.readUInt8()
                perSampleIVSize = Int(try reader.readUInt8())
                keyID = try KeyID(try reader.readBytes(16))
                constantIV = perSampleIVSize == 0 ? try reader.readBytes(Int(try reader.readUInt8())) : nil
            } else if let piff = schiChildren.first(where: { $0.type == "uuid" && $0.userType == Self.piffTrackEncryption }) {
                // PIFF 1.1: default_AlgorithmID (24 bits: 1 is AES-CTR), default_IV_size, default_KID.
                var (_, _, reader) = try piff.fullBoxReader(in: bytes)
                let algorithm = try reader.readUInt24()
                guard algorithm == 1 else { throw ProtectionError.malformed("PIFF algorithm \(algorithm) (AES-CTR is 1)") }
                scheme = .cenc
                perSampleIVSize = Int(try reader.readUInt8())
                keyID = try KeyID(try reader.readBytes(16))
                constantIV = nil
            } else {
                throw ProtectionError.malformed("no 'tenc'")
            }
        } catch let error as ProtectionError {
            throw error
        } catch {
            throw .malformed("init segment: \(error)")
        }
    }

    /// PIFF's track encryption box type (`uuid` 8974DBCE-7BE7-4C51-84F9-7148F9882554).
    static let piffTrackEncryption: [UInt8] = [0x89, 0x74, 0xDB, 0xCE, 0x7B, 0xE7, 0x4C, 0x51, 0x84, 0xF9, 0x71, 0x48, 0xF9, 0x88, 0x25, 0x54]

    /// The `tkhd` track ID of `trak`.
    static func trackID(of trak: MP4Box, _ bytes: [UInt8]) throws -> UInt32 {
        guard let tkhd = try trak.children(in: bytes).first("tkhd") else { throw ProtectionError.malformed("a 'trak' without 'tkhd'") }
        var (version, _, reader) = try tkhd.fullBoxReader(in: bytes)
        try reader.skip(version == 1 ? 16 : 8)  // creation and modification times
        return try reader.readUInt32()
    }

    /// The `trex` default sample description index of `track` in `moov` (1 when it gives none).

    /// The protection scheme of `initSegment`'s track, nil when it is clear (or not an init segment this reads).
    public static func scheme(ofInitSegment bytes: [UInt8]) -> CommonEncryption.Scheme? {
        (try? FMP4Decryptor(initSegment: bytes))?.scheme
    }

    /// The sample entry a `traf`'s `tfhd` names, or `defaultEntry`.
    func entry(of tfhd: MP4Box, _ bytes: [UInt8]) throws -> UInt32 {
        var (_, flags, reader) = try tfhd.fullBoxReader(in: bytes)
        _ = try reader.readUInt32()  // track_ID
        if flags & 0x01 != 0 { _ = try reader.readUInt64() }
        return flags & 0x02 != 0 ? try reader.readUInt32() : defaultEntry
    }

    /// Decrypts every sample of a media segment in place and returns the segment bytes.
    /// The boxes are left as they are; only the sample data changes.
    public func decrypt(segment: [UInt8], key: SecretBytes) throws(ProtectionError) -> [UInt8] {
        var out = segment
        try decrypt(segment: &out, key: key)
        return out
    }

    /// Decrypts every sample of a media segment where it lies (no copy of the segment when it is held only here).
    public func decrypt(segment out: inout [UInt8], key: SecretBytes) throws(ProtectionError) {
        let cipher = try self.cipher(key)
        let samples = try encryptedSamples(of: out)  // no reference to the bytes outlives this: they stay unshared
        guard samples.allSatisfy({ $0.range.upperBound <= Int64(out.count) }) else { throw .malformed("sample runs outside the segment") }
        try BlockCipher.inPlace(&out) { (buffer) throws(ProtectionError) in try decrypt(samples, in: buffer, at: 0, cipher: cipher) }
    }

    /// The encrypted samples of every fragment of a media segment.
    private func encryptedSamples(of segment: [UInt8]) throws(ProtectionError) -> [EncryptedSample] {
        do {
            return try MP4Box.children(of: segment, in: 0..<segment.count).all("moof").flatMap { (moof) throws -> [EncryptedSample] in
                try self.samples(of: moof, in: segment, at: 0)
            }
        } catch { throw (error as? ProtectionError) ?? .malformed("media segment: \(error)") }
    }

    /// The cipher of this track's scheme with `key`.
    public func cipher(_ key: SecretBytes) throws(ProtectionError) -> CommonEncryption {
        let iv = constantIV ?? [UInt8](repeating: 0, count: 16)
        return try CommonEncryption(scheme: scheme, key: key, iv: iv.count == 16 ? iv : iv + [UInt8](repeating: 0, count: 16 - iv.count))
    }

    /// Decrypts, in place, the `samples` that lie in `buffer`, a stretch of the segment starting at byte `offset`
    /// (a sample only partly inside is an error).
    public func decrypt(_ samples: [EncryptedSample], in buffer: UnsafeMutableRawBufferPointer, at offset: Int64,
                        cipher: CommonEncryption) throws(ProtectionError) {
        let end = offset + Int64(buffer.count)
        for sample in samples where sample.range.upperBound > offset && sample.range.lowerBound < end {
            guard sample.range.lowerBound >= offset, sample.range.upperBound <= end else {
                throw .malformed("a sample crosses the edge of the bytes being decrypted")
            }
            let local = Int(sample.range.lowerBound - offset)..<Int(sample.range.upperBound - offset)
            try cipher.decrypt(buffer, sampleAt: local, subsamples: sample.subsamples, iv: sample.iv, isVideo: isVideo)
        }
    }

    /// The encrypted samples of `moof` (a box of `bytes`, which start at byte `base` of the segment), each with
    /// its place in the segment, IV and subsamples ('senc', or PIFF's sample encryption box), in order.
    public func samples(of moof: MP4Box, in bytes: [UInt8], at base: Int64) throws(ProtectionError) -> [EncryptedSample] {
        var samples: [EncryptedSample] = []
        do {
            for traf in try moof.children(in: bytes).all("traf") { samples += try self.samples(of: traf, in: moof, bytes, at: base) }
        } catch let error as ProtectionError {
            throw error
        } catch {
            throw .malformed("media segment: \(error)")
        }
        return samples
    }

    /// The encrypted samples of one `traf` of `moof`, tagged with this track's ID.
    func samples(of traf: MP4Box, in moof: MP4Box, _ bytes: [UInt8], at base: Int64) throws(ProtectionError) -> [EncryptedSample] {
        var samples: [EncryptedSample] = []
        do {
            let children = try traf.children(in: bytes)
            guard let trun = children.first("trun") else { return [] }
            // A fragment of the clear lead names a clear sample entry: nothing in it is encrypted.
            if let tfhd = children.first("tfhd"), !protectedEntries.contains(try entry(of: tfhd, bytes)) { return [] }
            let defaultSize = try FragmentSampleSizes.defaultSize(of: children.first("tfhd"), bytes, trex: defaultSampleSize)
            let (sizes, dataOffset) = try FragmentSampleSizes.sizes(trun, bytes, defaultSize: defaultSize)
            let encryption = children.first("senc") ?? children.first { $0.type == "uuid" && $0.userType == FMP4Unprotect.piffSampleEncryption }
            let entries = try encryption.map { (box) throws -> [([UInt8], [Subsample])] in try senc(box, bytes, count: sizes.count) } ?? []
            // Samples whose IVs are in the fragment (no constant IV) cannot be decrypted without them: refused, so a
            // plan made from the 'moof' alone refuses the file before any byte goes out.
            guard encryption != nil || perSampleIVSize == 0 || sizes.isEmpty else {
                throw ProtectionError.malformed("a fragment of track \(trackID) carries no sample encryption box ('senc'): its samples' IVs are missing")
            }
            var position = base + Int64(moof.offset) + Int64(dataOffset)  // an offset within ±2 GiB of the moof: no overflow
            for (index, size) in sizes.enumerated() {
                guard position >= 0, size <= Int(Int32.max) else { throw ProtectionError.malformed("sample runs outside the segment") }
                let entry = index < entries.count ? entries[index] : ([], [])
                // Checked here, so a plan made from the 'moof' alone refuses the segment before any byte goes out.
                guard entry.1.isEmpty || entry.1.reduce(0, { $0 + Int($1.clear) + Int($1.protected) }) == size else {
                    throw ProtectionError.malformed("the subsamples of sample \(index) do not cover its \(size) bytes")
                }
                samples.append(EncryptedSample(range: position..<(position + Int64(size)), iv: entry.0, subsamples: entry.1, track: trackID))
                position += Int64(size)
            }
        } catch let error as ProtectionError {
            throw error
        } catch {
            throw .malformed("media segment: \(error)")
        }
        return samples
    }

    private func senc(_ box: MP4Box, _ bytes: [UInt8], count: Int) throws -> [([UInt8], [Subsample])] {
        var (_, flags, reader) = try box.fullBoxReader(in: bytes)
        var ivSize = perSampleIVSize
        if box.type == "uuid", flags & 0x1 != 0 {
            // PIFF's override of the track's settings: algorithm (24 bits), IV size, key ID.
            try reader.skip(3)
            ivSize = Int(try reader.readUInt8())
            try reader.skip(16)
        }
        let samples = Int(try reader.readUInt32())
        guard samples == count else { throw ProtectionError.malformed("'senc' has \(samples) entries for \(count) samples") }
        var entries: [([UInt8], [Subsample])] = []
        for _ in 0..<samples {
            let iv = try reader.readBytes(ivSize)
            var subsamples: [Subsample] = []
            if flags & 0x2 != 0 {
                for _ in 0..<Int(try reader.readUInt16()) {
                    subsamples.append(Subsample(clear: try reader.readUInt16(), protected: try reader.readUInt32()))
                }
            }
            entries.append((iv, subsamples))
        }
        return entries
    }
}

/// One encrypted sample of a media segment: where it lies, its IV and its subsamples (none: all protected).
public struct EncryptedSample: Sendable, Equatable {
    /// Its bytes in the segment.
    public var range: Range<Int64>
    /// The per-sample IV (empty with a constant IV).
    public var iv: [UInt8]
    /// Clear and protected stretches.
    public var subsamples: [Subsample]
    /// The track it belongs to (a file of several tracks decrypts each with its own settings).
    public var track: UInt32 = 0
}
