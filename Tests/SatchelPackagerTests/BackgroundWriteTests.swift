import Foundation
import SatchelSystem
import SatchelTestSupport
import Testing

/// Files written on a background thread from pooled buffers (how the packager writes segments).
@Suite("Background writes")
struct BackgroundWriteTests {
    /// A fresh folder, a pool of `buffers` and a writer.
    static func world(_ name: String, buffers: Int) throws -> (dir: URL, pool: BufferPool, syncer: BackgroundSync) {
        (try TestMedia.temporaryDirectory(name), BufferPool(count: buffers), BackgroundSync())
    }

    /// `buffer` emptied (its capacity kept) and filled with `bytes`.
    static func refill(_ buffer: [UInt8], with bytes: [UInt8]) -> [UInt8] {
        var buffer = buffer
        buffer.removeAll(keepingCapacity: true)
        buffer.append(contentsOf: bytes)
        return buffer
    }

    @Test("a file holds the header and the payload's first bytes; the buffer comes back to the pool as it was")
    func writesAndReturns() throws {
        let (dir, pool, syncer) = try Self.world("background-writes", buffers: 1)
        for round in 0..<3 {  // one buffer: each take waits for the previous write to give it back
            let taken = pool.take()
            if round > 0 { #expect(taken.count == 100_500, "the buffer of the previous round, as it was written") }
            let payload = Self.refill(taken, with: (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ round) }
                                      + [UInt8](repeating: 0xEE, count: 500))  // scratch beyond the length given
            try syncer.write([0xAA, 0xBB, UInt8(round)], payload, count: 100_000, to: dir.appendingPathComponent("file-\(round)").path,
                             returningTo: pool)
        }
        try syncer.wait()
        for round in 0..<3 {
            let bytes = try TestMedia.bytes(dir.appendingPathComponent("file-\(round)"))
            #expect(bytes.count == 100_003)
            #expect(Array(bytes.prefix(3)) == [0xAA, 0xBB, UInt8(round)])
            #expect(Array(bytes.dropFirst(3)) == (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ round) })
        }
    }

    @Test("a file that cannot be created is thrown at once, one that cannot be written by the next call and by wait; the buffer comes back either way")
    func failures() throws {
        let (dir, pool, syncer) = try Self.world("background-failures", buffers: 1)
        // Each write takes the pool's one buffer: a buffer not given back would make the next take wait for ever.
        #expect(throws: SystemError.self) {
            try syncer.write([], pool.take() + [1, 2, 3], count: 3, to: dir.appendingPathComponent("missing/file").path, returningTo: pool)
        }
        // /dev/full opens, and every write to it fails with ENOSPC.
        try syncer.write([], pool.take() + [1, 2, 3], count: 3, to: "/dev/full", returningTo: pool)
        let error = #expect(throws: SystemError.self) { try syncer.wait() }
        #expect(error?.errno == ENOSPC)
        #expect(throws: SystemError.self) {
            try syncer.write([], pool.take() + [4], count: 1, to: dir.appendingPathComponent("after").path, returningTo: pool)
        }
        _ = pool.take()
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("after").path), "nothing is written after a failure")
    }

    @Test("a batch: each file holds its bytes as the writer's thread prepared them; every buffer comes back; a preparation that fails fails the batch (nothing named complete)")
    func batches() throws {
        let (dir, pool, syncer) = try Self.world("background-batches", buffers: 3)
        for round in 0..<4 {  // three buffers: each round waits for the last batch to give them back
            let payloads = (0..<3).map { file in Self.refill(pool.take(), with: (0..<50_000).map { UInt8(truncatingIfNeeded: $0 &+ file &+ round) }) }
            let paths = (0..<3).map { dir.appendingPathComponent("round-\(round)-\($0)").path }
            try syncer.write(payloads, to: paths, returningTo: pool) { files in
                for index in files.indices { files[index] = files[index].map { $0 ^ 0x5A } + [UInt8(index)] }
            }
        }
        try syncer.wait()
        for round in 0..<4 {
            for file in 0..<3 {
                let bytes = try TestMedia.bytes(dir.appendingPathComponent("round-\(round)-\(file)"))
                #expect(bytes == (0..<50_000).map { UInt8(truncatingIfNeeded: $0 &+ file &+ round) ^ 0x5A } + [UInt8(file)])
            }
        }
        struct Refused: Error {}
        try syncer.write([pool.take()], to: [dir.appendingPathComponent("refused").path], returningTo: pool) { _ in throw Refused() }
        #expect(throws: SystemError.self) { try syncer.wait() }
        _ = (pool.take(), pool.take(), pool.take())  // all three came back
    }
}
