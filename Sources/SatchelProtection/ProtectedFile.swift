import Crypto
import Foundation
import SatchelBytes

/// A Satchel protected file (any document licensed like video and read by random
/// access). The format is specified in `docs/protected-file.md`: a header — magic, version, key ID, nonce prefix, chunk
/// size, plain size, key check, content type, metadata — sealed by a tag, then the content in chunks, each sealed with
/// AES-128-GCM under the content key with the nonce `prefix ‖ index ‖ last` (the STREAM construction) and the header's
/// tag as associated data. Any byte range is read by opening the chunks it touches; a change, a reordering, a cut or
/// an extension is found.
public struct ProtectedFileHeader: Sendable, Equatable {
    /// `SATCHELF`.
    public static let magic: [UInt8] = Array("SATCHELF".utf8)
    /// The version this code writes and reads.
    public static let version: UInt8 = 1
    /// The default chunk size (64 KiB).
    public static let defaultChunkSize = 65_536
    /// The chunk sizes allowed: 1 KiB to 16 MiB.
    public static let chunkSizes = 1024...(16 << 20)
    /// The fixed part's length (up to the content type's length field, included).
    static let fixedLength = 57
    /// GCM's tag length.
    public static let tagLength = 16
    /// The longest content type and metadata.
    static let maximumContentType = 255, maximumMetadata = 16_384
    /// The longest header.
    public static let maximumLength = fixedLength + maximumContentType + 2 + maximumMetadata + tagLength
    /// The block whose encryption is the key check (not the zero block, whose encryption is GCM's hash key).
    static let keyCheckBlock: [UInt8] = Array("SATCHEL-KEYCHECK".utf8)

    /// The key ID of the content key.
    public var keyID: KeyID
    /// Seven random bytes, the start of every nonce of this file.
    public var noncePrefix: [UInt8]
    /// The plain bytes per chunk (the last may hold fewer).
    public var chunkSize: Int
    /// The plain content's size.
    public var plainSize: UInt64
    /// The content's media type (`application/pdf`, `application/epub+zip`, …).
    public var contentType: String
    /// The publisher's values (a title, an author).
    public var metadata: [String: String]
    /// The first eight bytes of the content key's encryption of `SATCHEL-KEYCHECK`: a wrong key is said as such.
    public var keyCheck: [UInt8]
    /// The header's tag (filled in by ``sealed(with:)``; read from the file by ``parse(_:)``).
    public var tag: [UInt8] = []
    /// The flags byte: 0 when written; read as found (ignored, but covered by the tag).
    var flags: UInt8 = 0

    /// A header for a file of `plainSize` bytes; its key check and tag come with ``sealed(with:)``.
    public init(keyID: KeyID, noncePrefix: [UInt8] = SecureRandom.bytes(7), chunkSize: Int = Self.defaultChunkSize, plainSize: UInt64,
                contentType: String, metadata: [String: String] = [:]) {
        self.keyID = keyID
        self.noncePrefix = noncePrefix
        self.chunkSize = chunkSize
        self.plainSize = plainSize
        self.contentType = contentType
        self.metadata = metadata
        keyCheck = []
    }

    /// The number of chunks: the plain size over the chunk size, rounded up, and at least one (an empty file has one
    /// empty chunk, so that cutting it is seen).
    public var chunkCount: UInt64 {
        let size = UInt64(chunkSize)
        return max(1, plainSize / size + (plainSize % size == 0 ? 0 : 1))
    }

    /// The plain length of chunk `index`.
    public func plainLength(ofChunk index: UInt64) -> Int {
        index + 1 < chunkCount ? chunkSize : Int(plainSize - index * UInt64(chunkSize))
    }

    /// The header's length in the file.
    public var length: Int { Self.fixedLength + contentTypeBytes.count + 2 + metadataBytes.count + Self.tagLength }

    /// Where chunk `index` starts in the file.
    public func offset(ofChunk index: UInt64) -> UInt64 { UInt64(length) + index * UInt64(chunkSize + Self.tagLength) }

    /// The whole file's size.
    public var fileSize: UInt64 { UInt64(length) + plainSize + chunkCount * UInt64(Self.tagLength) }

    /// The nonce of chunk `index` (`last`: the final chunk); the header's tag takes index 0xFFFFFFFF with flag 2.
    func nonce(_ index: UInt32, flag: UInt8) -> [UInt8] {
        noncePrefix + [UInt8(index >> 24), UInt8(truncatingIfNeeded: index >> 16), UInt8(truncatingIfNeeded: index >> 8), UInt8(truncatingIfNeeded: index), flag]
    }

    /// The content type's and the metadata's bytes as read from a file (another writer's JSON is kept as it was,
    /// since the tag covers it); nil for a header made here.
    private var readContentType: [UInt8]?, readMetadata: [UInt8]?
    private var contentTypeBytes: [UInt8] { readContentType ?? Array(contentType.utf8) }
    private var metadataBytes: [UInt8] {
        readMetadata ?? (metadata.isEmpty ? [] : Array((try? JSONCoding.encoder().encode(metadata)) ?? Data()))
    }

    /// The header's bytes before its tag.
    func body() -> [UInt8] {
        var writer = ByteWriter()
        writer.writeBytes(Self.magic)
        writer.writeUInt8(Self.version)
        writer.writeUInt8(flags)
        writer.writeUInt16(UInt16(length))
        writer.writeBytes(keyID.bytes)
        writer.writeBytes(noncePrefix)
        writer.writeUInt32(UInt32(chunkSize))
        writer.writeUInt64(plainSize)
        writer.writeBytes(keyCheck)
        writer.writeUInt16(UInt16(contentTypeBytes.count))
        writer.writeBytes(contentTypeBytes)
        writer.writeUInt16(UInt16(metadataBytes.count))
        writer.writeBytes(metadataBytes)
        return writer.bytes
    }

    /// The header checked and sealed with `key`: its key check and tag filled in.
    public func sealed(with key: SecretBytes) throws(ProtectionError) -> ProtectedFileHeader {
        guard key.count == 16 else { throw .invalidLength(what: "content key", expected: 16, actual: key.count) }
        guard noncePrefix.count == 7 else { throw .invalidLength(what: "nonce prefix", expected: 7, actual: noncePrefix.count) }
        guard Self.chunkSizes.contains(chunkSize) else { throw .invalidMessage("the chunk size is 1 KiB to 16 MiB") }
        guard chunkCount <= UInt64(UInt32.max) else { throw .invalidMessage("the file has too many chunks for its chunk size") }
        guard !contentType.isEmpty, contentTypeBytes.count <= Self.maximumContentType else { throw .invalidMessage("the content type is 1 to 255 bytes") }
        guard metadataBytes.count <= Self.maximumMetadata else { throw .invalidMessage("the metadata is at most 16 KiB of JSON") }
        var sealed = self
        sealed.keyCheck = Array(try Self.keyCheck(key).prefix(8))
        sealed.tag = try ProtectedChunks.tag(header: sealed.body(), nonce: nonce(.max, flag: 2), key: key)
        return sealed
    }

    /// The header's bytes as written.
    public func bytes() -> [UInt8] { body() + tag }

    static func keyCheck(_ key: SecretBytes) throws(ProtectionError) -> [UInt8] {
        // One block of CBC under a zero IV is the block's encryption.
        try BlockCipher.cbcEncrypt(keyCheckBlock, key: SymmetricKey(data: key.bytes), iv: [UInt8](repeating: 0, count: 16))
    }

    /// Reads a header from the start of a file (`bytes` holds at least its length; ``maximumLength`` bytes always do).
    public static func parse(_ bytes: [UInt8]) throws(ProtectionError) -> ProtectedFileHeader {
        var reader = ByteReader(bytes)
        do {
            guard try reader.readBytes(8) == magic else { throw ProtectionError.malformed("not a Satchel protected file") }
            let version = try reader.readUInt8()
            guard version == Self.version else { throw ProtectionError.malformed("protected file version \(version) is not known (this reads version 1)") }
            let flags = try reader.readUInt8()
            let length = Int(try reader.readUInt16())
            guard length <= bytes.count else { throw ProtectionError.malformed("the header is cut short") }
            var header = ProtectedFileHeader(keyID: try KeyID(try reader.readBytes(16)), noncePrefix: try reader.readBytes(7),
                                             chunkSize: Int(try reader.readUInt32()), plainSize: try reader.readUInt64(), contentType: "")
            header.flags = flags
            header.keyCheck = try reader.readBytes(8)
            let typeLength = Int(try reader.readUInt16())
            guard typeLength <= maximumContentType else { throw ProtectionError.malformed("the content type is longer than 255 bytes") }
            let contentType = try reader.readBytes(typeLength)
            header.contentType = String(decoding: contentType, as: UTF8.self)
            header.readContentType = contentType
            let metadataLength = Int(try reader.readUInt16())
            guard metadataLength <= maximumMetadata else { throw ProtectionError.malformed("the metadata is longer than 16 KiB") }
            let metadata = try reader.readBytes(metadataLength)
            header.readMetadata = metadata
            if !metadata.isEmpty {
                guard let values = try? JSONCoding.decoder().decode([String: String].self, from: Data(metadata)) else {
                    throw ProtectionError.malformed("the metadata is not a JSON object of strings")
                }
                header.metadata = values
            }
            header.tag = try reader.readBytes(tagLength)
            guard header.length == length, chunkSizes.contains(header.chunkSize), header.chunkCount <= UInt64(UInt32.max) else {
                throw ProtectionError.malformed("the header's lengths do not agree")
            }
            return header
        } catch let error as ProtectionError {
            throw error
        } catch {
            throw .malformed("the header is cut short")
        }
    }

    /// Checks `key` against the header: the key check (a wrong key), then the tag (a changed header).
    public func verify(_ key: SecretBytes) throws(ProtectionError) {
        guard key.count == 16, ConstantTime.equals(Array(try Self.keyCheck(key).prefix(8)), keyCheck) else { throw .wrongKey }
        guard ConstantTime.equals(try ProtectedChunks.tag(header: body(), nonce: nonce(.max, flag: 2), key: key), tag) else { throw .integrity(chunk: -1) }
    }
}

/// Sealing and opening a protected file's chunks (AES-128-GCM, the header's tag as associated data).
public enum ProtectedChunks {
    /// The header's tag: GCM over no plaintext, the header's bytes as associated data.
    static func tag(header: [UInt8], nonce: [UInt8], key: SecretBytes) throws(ProtectionError) -> [UInt8] {
        do {
            let box = try AES.GCM.seal([UInt8](), using: SymmetricKey(data: key.bytes), nonce: try AES.GCM.Nonce(data: nonce), authenticating: header)
            return Array(box.tag)
        } catch {
            throw .cryptoFailure("AES-GCM")
        }
    }

    /// Chunk `index` of `header`'s file, sealed: its ciphertext then its tag.
    public static func seal(_ plain: [UInt8], index: UInt64, header: ProtectedFileHeader, key: SecretBytes) throws(ProtectionError) -> [UInt8] {
        guard index < header.chunkCount, plain.count == header.plainLength(ofChunk: index) else { throw .invalidMessage("chunk \(index) has the wrong length") }
        do {
            let nonce = try AES.GCM.Nonce(data: header.nonce(UInt32(index), flag: index + 1 == header.chunkCount ? 1 : 0))
            let box = try AES.GCM.seal(plain, using: SymmetricKey(data: key.bytes), nonce: nonce, authenticating: header.tag)
            return Array(box.ciphertext) + Array(box.tag)
        } catch {
            throw .cryptoFailure("AES-GCM")
        }
    }

    /// Opens chunk `index` as read from the file (ciphertext then tag); `integrity(chunk:)` when it does not open
    /// as that chunk of that file.
    public static func open(_ sealed: [UInt8], index: UInt64, header: ProtectedFileHeader, key: SecretBytes) throws(ProtectionError) -> [UInt8] {
        let chunk = Int(clamping: index)
        guard index < header.chunkCount, sealed.count == header.plainLength(ofChunk: index) + ProtectedFileHeader.tagLength else {
            throw .integrity(chunk: chunk)
        }
        do {
            let nonce = try AES.GCM.Nonce(data: header.nonce(UInt32(index), flag: index + 1 == header.chunkCount ? 1 : 0))
            let box = try AES.GCM.SealedBox(nonce: nonce, ciphertext: sealed.dropLast(ProtectedFileHeader.tagLength),
                                            tag: sealed.suffix(ProtectedFileHeader.tagLength))
            return Array(try AES.GCM.open(box, using: SymmetricKey(data: key.bytes), authenticating: header.tag))
        } catch {
            throw .integrity(chunk: chunk)
        }
    }
}
