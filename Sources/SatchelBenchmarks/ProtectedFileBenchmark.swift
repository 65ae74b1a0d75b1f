import Foundation
import SatchelBytes
import SatchelPackager
import SatchelProtection

/// Protected files (issue "Protected files"): a file of `megabytes` MB protected, then read back sequentially and by
/// random 4 KiB ranges through `ProtectedFileReader` over a local file, beside `openssl speed -evp aes-128-gcm` (its
/// decryption of 64 KiB blocks: the ceiling) in the same run. Target: sequential reading at least 60 % of the ceiling;
/// random reads cost the chunks they touch (printed: bytes decrypted per byte returned).
struct ProtectedFileBenchmark {
    let megabytes: Int
    let randomReads = 20_000

    func run() async throws {
        print("== protected files: \(megabytes) MB, 64 KiB chunks ==")
        let folder = NSTemporaryDirectory() + "satchel-bench-protected-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let plain = folder + "/plain.bin", protected = folder + "/plain.bin.satchel"
        try Self.makePlain(plain, megabytes: megabytes)
        let key = try ContentKey(keyID: .random(), key: SecretBytes(SecureRandom.bytes(16)), iv: [UInt8](repeating: 0, count: 16))
        let bytes = Double(megabytes) * 1_048_576

        var start = Date()
        let header = try FileProtector.protect(input: plain, output: protected, key: key, contentType: "application/octet-stream")
        let protectSeconds = Date().timeIntervalSince(start)
        print(String(format: "satchel protect (read, seal, write, fsync): %.0f MB/s", bytes / 1_000_000 / protectSeconds))

        let reader = try await ProtectedFileReader.open(try LocalByteSource(path: protected), key: key.key)
        start = Date()
        var total = 0
        for index in 0..<header.chunkCount { total += try await reader.chunk(index).count }
        let sequentialSeconds = Date().timeIntervalSince(start)
        let sequential = Double(total) / 1_000_000 / sequentialSeconds
        guard total == megabytes * 1_048_576 else { throw BenchmarkError(message: "read \(total) bytes, not \(megabytes) MB") }

        var generator = SystemRandomNumberGenerator()
        var touched: UInt64 = 0
        start = Date()
        for _ in 0..<randomReads {
            let offset = UInt64.random(in: 0..<(header.plainSize - 4096), using: &generator)
            let range = offset..<(offset + 4096)
            if let chunks = reader.chunks(for: range) { touched += UInt64(chunks.count) }
            _ = try await reader.read(range)
        }
        let randomSeconds = Date().timeIntervalSince(start)
        let amplification = Double(touched * UInt64(header.chunkSize)) / Double(randomReads * 4096)

        if let ceiling = Self.opensslGCMDecryptRate() {
            print(String(format: "openssl speed -evp aes-128-gcm -decrypt, 64 KiB blocks (reference, the ceiling): %.0f MB/s", ceiling))
            print(String(format: "sequential read, every chunk opened: %.0f MB/s = %.0f%% of openssl (target ≥ 60%%)", sequential, 100 * sequential / ceiling))
        } else {
            print(String(format: "sequential read, every chunk opened: %.0f MB/s (openssl not found: no reference)", sequential))
        }
        print(String(format: "random 4 KiB reads: %.0f reads/s, %.1f MB/s returned; %.2f chunks touched per read, %.1f bytes decrypted per byte returned",
                     Double(randomReads) / randomSeconds, Double(randomReads * 4096) / 1_000_000 / randomSeconds,
                     Double(touched) / Double(randomReads), amplification))
    }

    /// Writes `megabytes` MB of random bytes (one random MiB repeated with its first bytes changed, so chunks differ).
    static func makePlain(_ path: String, megabytes: Int) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil), let handle = FileHandle(forWritingAtPath: path) else {
            throw BenchmarkError(message: "cannot create \(path)")
        }
        defer { try? handle.close() }
        var block = SecureRandom.bytes(1_048_576)
        for index in 0..<megabytes {
            block[0] = UInt8(truncatingIfNeeded: index)
            block[1] = UInt8(truncatingIfNeeded: index >> 8)
            try handle.write(contentsOf: block)
        }
    }

    /// MB/s of AES-128-GCM decryption of 64 KiB blocks from `openssl speed`.
    static func opensslGCMDecryptRate() -> Double? {
        guard let output = Tool.output(["openssl", "speed", "-seconds", "3", "-bytes", "65536", "-decrypt", "-evp", "aes-128-gcm"]),
              let line = output.split(separator: "\n").last(where: { $0.lowercased().hasPrefix("aes-128-gcm") }),
              let value = line.split(separator: " ").last.flatMap({ Double($0.replacingOccurrences(of: "k", with: "")) }) else { return nil }
        return value * 1000 / 1_000_000  // openssl prints thousands of bytes per second
    }
}
