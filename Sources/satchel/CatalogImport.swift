import Foundation
import SatchelLicensing

/// `keys import --catalog FILE`: a catalogue of JSON Lines read a block at a time and imported in batches, each in one
/// transaction. A line that is not an entry stops the import, naming its line; what was imported before stays (run
/// again, it is replaced, not doubled).
struct CatalogImport {
    let file: String
    let store: any KeyStore
    /// Keys one transaction imports.
    static let keysPerBatch = 5_000

    func run() async throws {
        guard let handle = FileHandle(forReadingAtPath: file) else { throw CLIError("cannot read the catalogue \(file)") }
        defer { try? handle.close() }
        let started = ContinuousClock.now
        var batch: [CatalogEntry] = [], batchKeys = 0, imported = 0, assets = 0, lineNumber = 0, pending: [UInt8] = []
        func flush() async throws {
            guard !batch.isEmpty else { return }
            do { imported += try await store.importCatalog(batch) } catch {
                throw CLIError("\(file): the batch ending at line \(lineNumber) was not imported: \(error); \(imported) keys before it are; "
                               + "fix the catalogue and run the same command again (what was imported is replaced, not doubled)")
            }
            assets += batch.count
            (batch, batchKeys) = ([], 0)
        }
        func take(_ line: ArraySlice<UInt8>) async throws {
            lineNumber += 1
            let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard !text.isEmpty else { return }
            let entry: CatalogEntry
            do { entry = try CatalogEntry(line: text) } catch {
                try await flush()
                throw CLIError("\(file) line \(lineNumber): \(error.description); the lines before it are imported; fix it and run the same command again")
            }
            batch.append(entry)
            batchKeys += entry.keys.count
            if batchKeys >= Self.keysPerBatch { try await flush() }
        }
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            pending.append(contentsOf: chunk)
            var start = pending.startIndex
            while let newline = pending[start...].firstIndex(of: UInt8(ascii: "\n")) {
                try await take(pending[start..<newline])
                start = newline + 1
            }
            pending.removeSubrange(..<start)
            guard pending.count <= 1 << 20 else { throw CLIError("\(file) line \(lineNumber + 1) is longer than 1 MiB: not a catalogue entry") }
        }
        if !pending.isEmpty { try await take(pending[...]) }
        try await flush()
        let seconds = max((ContinuousClock.now - started) / .seconds(1), 0.001)
        print("imported \(imported) key\(imported == 1 ? "" : "s") of \(assets) asset\(assets == 1 ? "" : "s") from \(file) (\(Int(Double(imported) / seconds)) keys/s)")
    }
}
