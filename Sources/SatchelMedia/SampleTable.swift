import SatchelBytes

/// The sample table of a progressive MP4 track ('stbl'): times, sizes, offsets, sync samples.
struct SampleTable {
    var durations: [(count: UInt32, delta: UInt32)] = []
    var compositionOffsets: [(count: UInt32, offset: Int32)] = []
    var syncSamples: Set<UInt32>?
    var sizes: [UInt32] = []
    var chunks: [(firstChunk: UInt32, samplesPerChunk: UInt32)] = []
    var chunkOffsets: [UInt64] = []

    /// The table of `stbl`, read from `bytes`, for a file of `fileSize` bytes.
    init(_ stbl: [MP4Box], _ bytes: [UInt8], fileSize: Int) throws(MediaError) {
        do {
            var reader = try stbl.required("stts", in: "stbl").fullBoxReader(in: bytes).reader
            durations = try Self.entries(&reader, entrySize: 8) { r in (try r.readUInt32(), try r.readUInt32()) }
            if let ctts = stbl.first("ctts") {
                var reader = try ctts.fullBoxReader(in: bytes).reader
                compositionOffsets = try Self.entries(&reader, entrySize: 8) { r in (try r.readUInt32(), Int32(bitPattern: try r.readUInt32())) }
            }
            if let stss = stbl.first("stss") {
                var reader = try stss.fullBoxReader(in: bytes).reader
                syncSamples = Set(try Self.entries(&reader, entrySize: 4) { r in try r.readUInt32() })
            }
            if let stsz = stbl.first("stsz") {
                var reader = try stsz.fullBoxReader(in: bytes).reader
                let fixed = try reader.readUInt32()
                let count = Int(try reader.readUInt32())
                if fixed != 0 {
                    guard count <= fileSize / Int(fixed) else {
                        throw MediaError.malformed("'stsz' claims \(count) samples of \(fixed) bytes, more than the file holds")
                    }
                    sizes = Array(repeating: fixed, count: count)
                } else {
                    guard count * 4 <= reader.remaining else { throw MediaError.truncated("'stsz' with \(count) entries") }
                    sizes.reserveCapacity(count)
                    for _ in 0..<count { sizes.append(try reader.readUInt32()) }
                }
            } else {
                throw MediaError.unsupported("sample sizes in 'stz2' (compact sizes)")
            }
            var stscReader = try stbl.required("stsc", in: "stbl").fullBoxReader(in: bytes).reader
            chunks = try Self.entries(&stscReader, entrySize: 12) { r in
                let first = try r.readUInt32(), perChunk = try r.readUInt32()
                _ = try r.readUInt32()
                return (first, perChunk)
            }
            if let stco = stbl.first("stco") {
                var reader = try stco.fullBoxReader(in: bytes).reader
                chunkOffsets = try Self.entries(&reader, entrySize: 4) { r in UInt64(try r.readUInt32()) }
            } else if let co64 = stbl.first("co64") {
                var reader = try co64.fullBoxReader(in: bytes).reader
                chunkOffsets = try Self.entries(&reader, entrySize: 8) { r in try r.readUInt64() }
            } else {
                throw MediaError.malformed("'stbl' has neither 'stco' nor 'co64'")
            }
        } catch let error as MediaError {
            throw error
        } catch {
            throw .truncated("sample table: \(error)")
        }
    }

    /// Reads a counted list, refusing counts that cannot fit in the box.
    private static func entries<T>(_ reader: inout ByteReader, entrySize: Int, _ read: (inout ByteReader) throws -> T) throws -> [T] {
        let count = Int(try reader.readUInt32())
        guard count <= reader.remaining / entrySize else { throw MediaError.truncated("table of \(count) entries in \(reader.remaining) bytes") }
        var out: [T] = []
        out.reserveCapacity(count)
        for _ in 0..<count { out.append(try read(&reader)) }
        return out
    }

    /// The samples, placed by `source`: their bytes sliced out of `bytes`, or their ranges in the file.
    func samples(in bytes: [UInt8], isAudio: Bool, source: SampleSource) throws(MediaError) -> [MediaSample] {
        let count = sizes.count
        var samples: [MediaSample] = []
        samples.reserveCapacity(count)
        // Offsets: walk chunks.
        var offsets: [Int] = []
        offsets.reserveCapacity(count)
        for (index, run) in chunks.enumerated() {
            let lastChunk = index + 1 < chunks.count ? Int(chunks[index + 1].firstChunk) - 1 : chunkOffsets.count
            guard run.firstChunk >= 1, lastChunk <= chunkOffsets.count else { throw .malformed("'stsc' names chunks that 'stco' lacks") }
            var chunk = Int(run.firstChunk)
            while chunk <= lastChunk && offsets.count < count {
                var offset = Int(clamping: chunkOffsets[chunk - 1])
                let inChunk = min(Int(run.samplesPerChunk), count - offsets.count)
                for _ in 0..<inChunk {
                    offsets.append(offset)
                    // Saturating: a chunk offset near the top of the range makes the next sample lie past any file.
                    let (next, overflow) = offset.addingReportingOverflow(Int(sizes[offsets.count - 1]))
                    offset = overflow ? .max : next
                }
                chunk += 1
            }
        }
        guard offsets.count == count else { throw .malformed("chunk table covers \(offsets.count) of \(count) samples") }
        var durationIterator = RunIterator(durations.map { ($0.count, Int64($0.delta)) })
        var ctsIterator = RunIterator(compositionOffsets.map { ($0.count, Int64($0.offset)) })
        var dts: Int64 = 0
        for index in 0..<count {
            let size = Int(sizes[index]), offset = offsets[index]
            let duration = UInt32(clamping: durationIterator.next() ?? 0)
            let cts = Int32(clamping: ctsIterator.next() ?? 0)
            let sync = isAudio || (syncSamples?.contains(UInt32(index + 1)) ?? true)
            guard let sample = source.sample(dts: dts, ctsOffset: cts, duration: duration, isSync: sync, offset: offset, size: size, in: bytes) else {
                throw .truncated("sample \(index + 1) at offset \(offset) (\(size) bytes) lies past the end of the file")
            }
            samples.append(sample)
            dts += Int64(duration)
        }
        return samples
    }
}

/// Expands run-length (count, value) pairs.
struct RunIterator {
    private let runs: [(UInt32, Int64)]
    private var run = 0
    private var used: UInt32 = 0

    init(_ runs: [(UInt32, Int64)]) { self.runs = runs }

    mutating func next() -> Int64? {
        while run < runs.count && used >= runs[run].0 {
            run += 1
            used = 0
        }
        guard run < runs.count else { return nil }
        used += 1
        return runs[run].1
    }
}
