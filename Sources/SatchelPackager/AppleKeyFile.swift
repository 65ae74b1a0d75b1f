import Foundation
import SatchelBytes
import SatchelSystem

/// Apple's key file, as `mediafilesegmenter --encrypt-key-file` reads and writes it (the FairPlay Streaming
/// Programming Guide, "Using FPS Options with
/// the Media File Segmenter"): 32 bytes, the 16-byte content key followed by the 16-byte IV. So keys made for Apple's
/// tools package with Satchel, and Satchel's keys go to Apple's tools.
public enum AppleKeyFile {
    /// The file's length.
    public static let length = 32

    /// The key and IV in a key file's bytes.
    public static func parse(_ bytes: [UInt8]) throws(PackagerError) -> (key: SecretBytes, iv: [UInt8]) {
        guard bytes.count == length else {
            throw .invalidOptions("a key file holds 32 bytes (the content key, then the IV), not \(bytes.count)")
        }
        return (SecretBytes(Array(bytes[..<16])), Array(bytes[16...]))
    }

    /// The key file at `path`; or, when there is none, a new key and IV written there (mode 0600, crash-safe), as
    /// Apple's segmenter makes one. Answers the key, the IV, and whether the file was made.
    public static func readOrMake(_ path: String) throws(PackagerError) -> (key: SecretBytes, iv: [UInt8], made: Bool) {
        if FileManager.default.fileExists(atPath: path) {
            guard let handle = FileHandle(forReadingAtPath: path) else { throw .invalidOptions("cannot read the key file \(path)") }
            defer { try? handle.close() }
            let bytes = Array((try? handle.read(upToCount: length + 1)) ?? Data())
            let (key, iv) = try parse(bytes)
            return (key, iv, false)
        }
        let key = SecretBytes.random(16), iv = SecureRandom.bytes(16)
        do throws(SystemError) {
            try AtomicFile.write(key.bytes + iv, to: path, mode: PrivateFiles.fileMode)
        } catch {
            throw .output("cannot write the key file \(path): \(String(cString: strerror(error.errno)))")
        }
        return (key, iv, true)
    }
}
