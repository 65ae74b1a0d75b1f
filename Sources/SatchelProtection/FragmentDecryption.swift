import SatchelBytes
import SatchelMedia

/// What a clear plan needs of a protected fragmented MP4: the encrypted samples of each `moof`.
public protocol FragmentSampling: Sendable {
    /// The encrypted samples of `moof` (a box of `bytes`, which start at byte `base` of the stream), in order.
    func samples(of moof: MP4Box, in bytes: [UInt8], at base: Int64) throws(ProtectionError) -> [EncryptedSample]
}

/// Fragments made clear where they are read: their samples, and their decryption with the keys.
public protocol FragmentDecryption: FragmentSampling {
    /// Decrypts, in place, the `samples` that lie in `buffer`, a stretch of the stream starting at byte `offset` (a
    /// sample only partly inside is an error).
    func decrypt(_ samples: [EncryptedSample], in buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(ProtectionError)
}

extension FragmentDecryption {
    /// Decrypts, in place, the `samples` in `bytes`, a stretch of the stream starting at byte `offset`.
    public func decrypt(_ samples: [EncryptedSample], in bytes: inout [UInt8], at offset: Int64) throws(ProtectionError) {
        try BlockCipher.inPlace(&bytes) { (buffer) throws(ProtectionError) in try decrypt(samples, in: buffer, at: offset) }
    }
}

extension FMP4Decryptor: FragmentSampling {}

/// One track's settings with its key: a CMAF segment's decryption.
package struct KeyedDecryptor: FragmentDecryption {
    /// The track's protection (its scheme, default KID and IV size).
    package let decryptor: FMP4Decryptor
    let cipher: CommonEncryption

    /// `decryptor` with `key`.
    package init(_ decryptor: FMP4Decryptor, key: SecretBytes) throws(ProtectionError) {
        self.decryptor = decryptor
        cipher = try decryptor.cipher(key)
    }

    package func samples(of moof: MP4Box, in bytes: [UInt8], at base: Int64) throws(ProtectionError) -> [EncryptedSample] {
        try decryptor.samples(of: moof, in: bytes, at: base)
    }

    package func decrypt(_ samples: [EncryptedSample], in buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(ProtectionError) {
        try decryptor.decrypt(samples, in: buffer, at: offset, cipher: cipher)
    }
}

/// Every protected track of a fragmented MP4 file — a single-file download with CENC `cenc` or `cbcs`, or a PIFF
/// `.ismv` — each fragment's `traf` decrypted with its own track's settings and key.
public struct FMP4FileDecryptor: FragmentDecryption {
    /// The protected tracks' settings, by track ID (a clear track is not here).
    public let tracks: [UInt32: FMP4Decryptor]
    private let ciphers: [UInt32: CommonEncryption]

    /// The protected tracks of the file whose `moov` is in `head` (the file's first boxes); empty when none is.
    public static func tracks(ofHead head: [UInt8]) throws(ProtectionError) -> [UInt32: FMP4Decryptor] {
        do {
            guard let moov = try MP4Box.children(of: head, in: 0..<head.count).first("moov") else { throw ProtectionError.malformed("no 'moov'") }
            var tracks: [UInt32: FMP4Decryptor] = [:]
            for trak in try moov.children(in: head).all("trak") {
                guard let decryptor = try? FMP4Decryptor(trak: trak, of: moov, in: head) else { continue }  // a clear track
                tracks[decryptor.trackID] = decryptor
            }
            return tracks
        } catch let error as ProtectionError {
            throw error
        } catch {
            throw .malformed("the file's 'moov': \(error)")
        }
    }

    /// `tracks`, each with its key from `keys` (by track ID).
    public init(tracks: [UInt32: FMP4Decryptor], keys: [UInt32: SecretBytes]) throws(ProtectionError) {
        self.tracks = tracks
        var ciphers: [UInt32: CommonEncryption] = [:]
        for (id, decryptor) in tracks {
            guard let key = keys[id] else { throw .malformed("no key for track \(id)") }
            ciphers[id] = try decryptor.cipher(key)
        }
        self.ciphers = ciphers
    }

    public func samples(of moof: MP4Box, in bytes: [UInt8], at base: Int64) throws(ProtectionError) -> [EncryptedSample] {
        var samples: [EncryptedSample] = []
        do {
            for traf in try moof.children(in: bytes).all("traf") {
                guard let tfhd = try traf.children(in: bytes).first("tfhd") else { continue }
                var (_, _, reader) = try tfhd.fullBoxReader(in: bytes)
                guard let decryptor = tracks[try reader.readUInt32()] else { continue }  // a clear track's fragment
                samples += try decryptor.samples(of: traf, in: moof, bytes, at: base)
            }
        } catch let error as ProtectionError {
            throw error
        } catch {
            throw .malformed("a fragment: \(error)")
        }
        return samples
    }

    public func decrypt(_ samples: [EncryptedSample], in buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(ProtectionError) {
        for (track, decryptor) in tracks {
            guard let cipher = ciphers[track] else { continue }
            let own = samples.filter { $0.track == track }
            if !own.isEmpty { try decryptor.decrypt(own, in: buffer, at: offset, cipher: cipher) }
        }
    }
}
