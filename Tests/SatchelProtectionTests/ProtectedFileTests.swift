import Foundation
import SatchelBytes
import SatchelProtection
import SatchelTestSupport
import Testing

/// Satchel protected files (seed 002's protected files; `docs/protected-file.md`): round trips by random access,
/// every kind of damage found and named by its chunk, a wrong key said as such, and the document's vectors.
@Suite("Protected files")
struct ProtectedFileTests {
    static let keyID = (try? KeyID(hex: "00112233445566778899aabbccddeeff")) ?? KeyID.random()
    static let key = SecretBytes(Array(0..<16))

    /// `plain` protected in memory with `chunkSize`.
    static func protect(_ plain: [UInt8], chunkSize: Int = 1024, prefix: [UInt8] = Array(repeating: 7, count: 7),
                        metadata: [String: String] = [:]) throws -> [UInt8] {
        let header = try ProtectedFileHeader(keyID: keyID, noncePrefix: prefix, chunkSize: chunkSize, plainSize: UInt64(plain.count),
                                             contentType: "application/pdf", metadata: metadata).sealed(with: key)
        var file = header.bytes()
        for index in 0..<header.chunkCount {
            let start = Int(index) * chunkSize
            file += try ProtectedChunks.seal(Array(plain[start..<(start + header.plainLength(ofChunk: index))]), index: index, header: header, key: key)
        }
        return file
    }

    /// The error reading all of `file` gives (nil: it read, and equalled `plain`).
    static func failure(_ file: [UInt8], _ plain: [UInt8], key: SecretBytes = key) async -> ProtectionError? {
        do {
            let reader = try await ProtectedFileReader.open(MemoryByteSource(file), key: key)
            let read = try await reader.read(0..<UInt64(plain.count))
            return read == plain ? nil : .malformed("read other bytes")
        } catch let error as ProtectionError {
            return error
        } catch {
            return .malformed("\(error)")
        }
    }

    @Test("round trips for 0, 1, chunk − 1, chunk, chunk + 1 and a large size: random ranges, across chunk edges and past the end, equal the plain bytes; a range reads only the chunks it touches", arguments: [0, 1, 1023, 1024, 1025, 300_017])
    func roundTrip(size: Int) async throws {
        var generator = SplitMix64(seed: UInt64(size) + 1)
        let plain = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let file = try Self.protect(plain, metadata: ["title": "A book"])
        let reader = try await ProtectedFileReader.open(MemoryByteSource(file), key: Self.key)
        #expect(reader.header.plainSize == UInt64(size) && reader.header.contentType == "application/pdf" && reader.header.metadata == ["title": "A book"])
        #expect(reader.header.fileSize == UInt64(file.count))
        #expect(try await reader.read(0..<UInt64(size)) == plain)
        for _ in 0..<200 {
            let start = Int.random(in: 0...(size + 10), using: &generator)
            let end = start + Int.random(in: 0...3000, using: &generator)
            let expected = start >= size ? [] : Array(plain[start..<min(end, size)])
            #expect(try await reader.read(UInt64(start)..<UInt64(end)) == expected)
        }
        if size > 2048 {
            #expect(reader.chunks(for: 1000..<1100) == 0...1, "a range across an edge opens its two chunks")
            #expect(reader.chunks(for: 2048..<2049) == 2...2)
        }
    }

    @Test("every single-byte change of the content is found and names its chunk; a change of the header is a damaged header, a wrong key or not a protected file — never plain bytes")
    func everyByte() async throws {
        let plain = (0..<2600).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let file = try Self.protect(plain)
        let header = try ProtectedFileHeader.parse(file)
        for position in file.indices {
            var damaged = file
            damaged[position] ^= 0x01
            let error = await Self.failure(damaged, plain)
            if position >= header.length {
                let chunk = (position - header.length) / (1024 + 16)
                #expect(error == .integrity(chunk: chunk), "byte \(position)")
                #expect(error?.description.contains("chunk \(chunk) ") == true)
            } else {
                let expected: Bool
                switch error {
                case .integrity(chunk: -1)?, .wrongKey?, .malformed?: expected = true
                default: expected = false
                }
                #expect(expected, "header byte \(position): \(String(describing: error))")
            }
        }
    }

    @Test("two chunks swapped, a file cut short (inside a chunk, or a whole chunk), a file extended, a wrong key: each a typed error, never garbage")
    func damage() async throws {
        let plain = (0..<3000).map { UInt8(truncatingIfNeeded: $0) }
        let file = try Self.protect(plain)
        let length = try ProtectedFileHeader.parse(file).length
        let sealed = 1024 + 16
        var swapped = file
        swapped.replaceSubrange(length..<(length + 2 * sealed),
                                with: Array(file[(length + sealed)..<(length + 2 * sealed)]) + Array(file[length..<(length + sealed)]))
        #expect(await Self.failure(swapped, plain) == .integrity(chunk: 0))
        #expect(await Self.failure(Array(file.dropLast(10)), plain) == .integrity(chunk: 2))
        #expect(await Self.failure(Array(file.prefix(length + sealed)), plain) == .integrity(chunk: 1))
        #expect(await Self.failure(file + [0], plain) == .integrity(chunk: 2))
        // The last chunk moved to the end of a shorter file with the same header would not open as a last chunk.
        #expect(await Self.failure(file, plain, key: SecretBytes(Array(repeating: 9, count: 16))) == .wrongKey)
        #expect(await Self.failure(Array(file.prefix(20)), plain) == .malformed("the header is cut short"))
        #expect(await Self.failure(Array("%PDF-1.7".utf8) + file, plain) == .malformed("not a Satchel protected file"))
        // An empty file's one chunk must be there: without it, the file is cut.
        let empty = try Self.protect([])
        #expect(await Self.failure(empty, []) == nil)
        #expect(await Self.failure(Array(empty.prefix(try ProtectedFileHeader.parse(empty).length)), []) == .integrity(chunk: 0))
    }

    @Test("the format document's test vectors: the file Satchel writes for each is the document's, byte for byte, and opens to its plain text")
    func documentVectors() async throws {
        let document = try String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../docs/protected-file.md").standardized, encoding: .utf8)
        let vectors = ProtectedFileVector.parse(document)
        #expect(vectors.count >= 2, "the document lists its vectors")
        for vector in vectors {
            let header = try ProtectedFileHeader(keyID: try KeyID(hex: vector.keyID), noncePrefix: try Hex.decode(vector.noncePrefix, count: 7),
                                                 chunkSize: vector.chunkSize, plainSize: UInt64(vector.plain.count),
                                                 contentType: vector.contentType, metadata: vector.metadata).sealed(with: SecretBytes(try Hex.decode(vector.key, count: 16)))
            var file = header.bytes()
            for index in 0..<header.chunkCount {
                let start = Int(index) * vector.chunkSize
                file += try ProtectedChunks.seal(Array(vector.plain[start..<(start + header.plainLength(ofChunk: index))]), index: index, header: header,
                                                 key: SecretBytes(try Hex.decode(vector.key, count: 16)))
            }
            #expect(Hex.encode(file) == vector.file, "vector \(vector.name)")
            let reader = try await ProtectedFileReader.open(MemoryByteSource(try Hex.decode(vector.file)), key: SecretBytes(try Hex.decode(vector.key, count: 16)))
            #expect(try await reader.read(0..<UInt64(vector.plain.count)) == vector.plain)
        }
    }
}

/// A test vector as `docs/protected-file.md` lists it: `name:` then `key`, `key ID`, `nonce prefix`, `chunk size`,
/// `content type`, `metadata`, `plain` (text), `file` (hex, possibly over several lines).
struct ProtectedFileVector {
    var name = "", key = "", keyID = "", noncePrefix = "", contentType = "", file = ""
    var chunkSize = 0
    var metadata: [String: String] = [:]
    var plain: [UInt8] = []

    static func parse(_ document: String) -> [ProtectedFileVector] {
        var vectors: [ProtectedFileVector] = []
        var current: ProtectedFileVector?
        var fence = 0  // 1: "file:" read, its block next; 2: inside the block
        for raw in document.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("vector: ") {
                if let current { vectors.append(current) }
                current = ProtectedFileVector(name: String(line.dropFirst(8)))
                fence = 0
                continue
            }
            guard current != nil else { continue }
            if line == "```" {
                fence = fence == 1 ? 2 : 0
                continue
            }
            if fence == 2 { current?.file += line; continue }
            func value(_ name: String) -> String? { line.hasPrefix(name + ": ") ? String(line.dropFirst(name.count + 2)) : nil }
            if let v = value("key") { current?.key = v }
            if let v = value("key ID") { current?.keyID = v }
            if let v = value("nonce prefix") { current?.noncePrefix = v }
            if let v = value("chunk size") { current?.chunkSize = Int(v) ?? 0 }
            if let v = value("content type") { current?.contentType = v }
            if let v = value("metadata"), let data = v.data(using: .utf8) { current?.metadata = (try? JSONDecoder().decode([String: String].self, from: data)) ?? [:] }
            if let v = value("plain") {
                // `TEXT × N`: the text N times.
                let parts = v.components(separatedBy: " × ")
                current?.plain = parts.count == 2 ? Array(String(repeating: parts[0], count: Int(parts[1]) ?? 1).utf8) : Array(v.utf8)
            }
            if line == "file:" { fence = 1 }
        }
        if let current { vectors.append(current) }
        return vectors
    }
}
