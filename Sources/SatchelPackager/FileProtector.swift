#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import SatchelBytes
import SatchelProtection
import SatchelSystem

/// Any file made a Satchel protected file (`ProtectedFileHeader`): read a chunk at a time, each sealed and written as
/// it comes, the output replaced all at once (a crash leaves the old file or none, never a part).
public enum FileProtector {
    /// Protects `input` into `output` under `key` (its key ID in the header); answers the header written. With
    /// `keyFile`, the key is written there too (mode 0600, as `satchel package` writes a package's keys), once the
    /// output is in place.
    @discardableResult
    public static func protect(input: String, output: String, key contentKey: ContentKey, contentType: String,
                               chunkSize: Int = ProtectedFileHeader.defaultChunkSize, metadata: [String: String] = [:],
                               keyFile: String? = nil) throws(PackagerError) -> ProtectedFileHeader {
        let staged = try keyFile.map { path throws(PackagerError) in
            try StagedKeyFile(KeyFile(scheme: "satchel-file", fairPlayURI: nil, keys: [(contentKey, 0)]), destination: path)
        }
        do {
            let header = try protect(input: input, output: output, keyID: contentKey.keyID, key: contentKey.key, contentType: contentType,
                                     chunkSize: chunkSize, metadata: metadata)
            try staged?.commit()
            return header
        } catch {
            staged?.discard()
            throw error
        }
    }

    private static func protect(input: String, output: String, keyID: KeyID, key: SecretBytes, contentType: String,
                                chunkSize: Int, metadata: [String: String]) throws(PackagerError) -> ProtectedFileHeader {
        let source: ConfinedFile
        do {
            let url = URL(fileURLWithPath: input)
            source = try ConfinedFile.open(url.lastPathComponent, below: url.deletingLastPathComponent().path)
        } catch {
            throw .input(file: input, reason: error.description)
        }
        let header: ProtectedFileHeader
        do {
            header = try ProtectedFileHeader(keyID: keyID, chunkSize: chunkSize, plainSize: UInt64(source.size), contentType: contentType,
                                             metadata: metadata).sealed(with: key)
        } catch {
            throw .invalidOptions(error.description)
        }
        do throws(SystemError) {
            try AtomicFile.write(to: output) { (out, path) throws(SystemError) in
                try AtomicFile.writeAll(out, header.bytes(), path: path)
                for index in 0..<header.chunkCount {
                    let plain: [UInt8]
                    do { plain = try source.read(header.plainLength(ofChunk: index), at: Int64(index) * Int64(chunkSize)) } catch {
                        throw SystemError("read all of", path: input, errno: EIO)  // it shrank while read
                    }
                    let sealed: [UInt8]
                    do { sealed = try ProtectedChunks.seal(plain, index: index, header: header, key: key) } catch {
                        throw SystemError("seal a chunk for", path: path, errno: EINVAL)
                    }
                    try AtomicFile.writeAll(out, sealed, path: path)
                }
            }
        } catch {
            throw .output(error.description)
        }
        return header
    }
}
