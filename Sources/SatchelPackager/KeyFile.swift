import Foundation
import SatchelSystem
import SatchelBytes
import SatchelProtection

/// A package's key file (`movie.keys.json` beside the `movie` folder): the key IDs, keys and IVs, for a key store to
/// import. Written with mode 0600 outside the package folder, so an origin that publishes packages never holds it.
public struct KeyFile: Codable, Sendable, Equatable {
    /// One key.
    public struct Entry: Codable, Sendable, Equatable {
        /// Key ID, hex.
        public var keyId: String
        /// Content key, hex.
        public var key: String
        /// IV, hex.
        public var iv: String
        /// First segment this key protects (key rotation), 0 otherwise.
        public var firstSegment: Int
    }

    /// The scheme the keys protect.
    public var scheme: String
    /// The FairPlay key URI, if any.
    public var fairPlayURI: String?
    /// The keys.
    public var keys: [Entry]

    /// Entries for content keys.
    init(scheme: String, fairPlayURI: String?, keys: [(ContentKey, Int)]) {
        self.scheme = scheme
        self.fairPlayURI = fairPlayURI
        self.keys = keys.map { Entry(keyId: $0.0.keyID.hex, key: Hex.encode($0.0.key.bytes), iv: Hex.encode($0.0.iv), firstSegment: $0.1) }
    }

    /// Reads a key file.
    public static func read(_ path: String) throws -> KeyFile {
        try JSONCoding.decoder().decode(KeyFile.self, from: Data(contentsOf: URL(fileURLWithPath: path)))  // blocking-ok: a key file of a few hundred bytes, read by the CLI before anything serves
    }

    /// The content keys.
    public func contentKeys() throws -> [ContentKey] {
        try keys.map { entry in
            try ContentKey(keyID: KeyID(hex: entry.keyId), key: SecretBytes(hex: entry.key, count: 16), iv: Hex.decode(entry.iv, count: 16))
        }
    }

    var data: [UInt8] {
        Array((try? JSONCoding.encoder(.pretty).encode(self)) ?? Data())
    }
}

/// A key file written durably under a temporary name beside its destination (``KeyFile/data``, mode 0600), renamed
/// into place by ``commit()`` once the package it belongs to is in place.
struct StagedKeyFile {
    /// Where the key file goes.
    let destination: String
    private let staged: String

    init(_ file: KeyFile, destination path: String) throws(PackagerError) {
        destination = URL(fileURLWithPath: path).standardizedFileURL.path
        let parent = URL(fileURLWithPath: destination).deletingLastPathComponent()
        staged = parent.appendingPathComponent(".\(URL(fileURLWithPath: destination).lastPathComponent).staged-\(SecureRandom.uuid().uuidString)").path
        do {
            try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
        } catch {
            throw .output("cannot create \(parent.path) for the key file")
        }
        do throws(SystemError) {
            try AtomicFile.write(file.data, to: staged, mode: 0o600, replace: false)
        } catch {
            throw .output("cannot write the key file beside \(destination): \(String(cString: strerror(error.errno)))")
        }
    }

    /// Renames the key file into place (replacing an earlier one); on failure the keys stay in the staged file the error names.
    func commit() throws(PackagerError) {
        guard rename(staged, destination) == 0 else {
            throw .output("the package is in place but its keys are still in \(staged): cannot rename it to \(destination): \(String(cString: strerror(errno)))")
        }
        do throws(SystemError) {
            try AtomicFile.syncDirectory(URL(fileURLWithPath: destination).deletingLastPathComponent().path)
        } catch {
            throw .output("the key file is in place but its rename may not survive a crash: \(String(cString: strerror(error.errno)))")
        }
    }

    /// Removes the staged file after the package failed.
    func discard() {
        _ = unlink(staged)
    }
}
