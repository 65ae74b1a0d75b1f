import Foundation
import SatchelMedia
import SatchelSystem

/// One input file: its tracks, and where their sample bytes are read from.
///
/// An MPEG-TS input is read whole (its samples are rebuilt from PES packets). An MP4 or MOV input is read
/// by layout (``MP4Layout``): its `moov` and `moof` boxes are read, the samples are demuxed from them with their
/// places in the file, and each segment's sample bytes are read from the file when the segment is written
/// (``read(_:into:)``), into a buffer reused from segment to segment. An input of any size then costs the memory
/// of its metadata, not its size, and the bytes are read once, just before they are used.
final class InputMedia: @unchecked Sendable {  // immutable after init; the descriptor is only read with pread
    /// The file's path.
    let path: String
    /// Its tracks. The samples of an MP4 input carry their ``MediaSample/fileRange`` and no bytes;
    /// ``read(_:into:)`` gives their bytes.
    let tracks: [MediaTrack]
    /// The open file of an input read by layout; nil when the samples' bytes are in memory.
    private let descriptor: Int32?

    /// Opens `path` and demuxes it, sniffing MP4/MOV or MPEG-TS.
    init(path: String) throws(PackagerError) {
        self.path = path
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .input(file: path, reason: "cannot open the file: \(String(cString: strerror(errno)))") }
        do {
            var info = stat()
            guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { throw PackagerError.input(file: path, reason: "not a regular file") }
            let size = Int(info.st_size)
            let head = try Self.read(descriptor, count: min(size, 189), at: 0, path: path)
            guard head.count >= 8 else { throw PackagerError.input(file: path, reason: "the file is too short to be media") }
            let isTS = head[0] == 0x47 && (head.count < 189 || head[188] == 0x47)
            let firstBox = String(decoding: head[4..<8], as: UTF8.self)
            guard isTS || Self.topLevelBoxes.contains(firstBox) else { throw PackagerError.input(file: path, reason: "not an MP4, MOV or MPEG-TS file") }
            do {
                if isTS {
                    let limit = MachineMemory.addressSpace
                    guard size <= limit else {
                        throw PackagerError.input(file: path, reason: "the file (\(size / 1_000_000_000) GB) is larger than this machine's memory and "
                                                  + "swap together (\(limit / 1_000_000_000) GB); an MPEG-TS input is read whole")
                    }
                    tracks = try TSDemuxer.demux(try Self.read(descriptor, count: size, at: 0, path: path))
                    close(descriptor)
                    self.descriptor = nil
                } else {
                    tracks = try MP4Demuxer.demux(layout: try Self.layout(descriptor, size: size, path: path))
                    self.descriptor = descriptor
                }
            } catch let error as MediaError {
                throw PackagerError.input(file: path, reason: "\(error)")
            }
        } catch let error as PackagerError {
            close(descriptor)
            throw error
        } catch {
            close(descriptor)
            throw .input(file: path, reason: "\(error)")
        }
    }

    deinit {
        if let descriptor { close(descriptor) }
    }

    /// The bytes of `samples`, one after another, read into `payload` (grown when a segment needs more, else
    /// reused, pages and all): copied from memory, or read from the file with one `preadv` per stretch of the file
    /// (see ``gatheredRead(_:into:)``). Returns their length; the buffer may be longer.
    func read(_ samples: ArraySlice<MediaSample>, into payload: inout [UInt8]) throws(PackagerError) -> Int {
        let total = samples.reduce(0) { $0 + $1.byteCount }
        if payload.count < total {
            payload = [UInt8](unsafeUninitializedCapacity: total + total / 4) { _, count in count = total + total / 4 }
        }
        var failure: PackagerError?
        payload.withUnsafeMutableBytes { raw in
            guard let base = raw.baseAddress else { return }
            guard descriptor == nil else {
                failure = gatheredRead(samples, into: base)
                return
            }
            var position = 0
            for sample in samples {
                sample.data.withUnsafeBytes { source in
                    if let start = source.baseAddress { (base + position).copyMemory(from: start, byteCount: source.count) }
                }
                position += sample.data.count
            }
        }
        if let failure { throw failure }
        return total
    }

    /// Gaps between samples of one track (the other tracks' bytes, interleaved) read and dropped rather than
    /// skipped with another system call: a call costs about as much as copying this many bytes.
    static let maxGap = 16 << 10

    /// Reads the file's bytes of `samples` packed one after another at `destination`. Samples in file order whose
    /// gaps are at most ``maxGap`` make one stretch, read with one `preadv` (at most 1,024 pieces) whose pieces
    /// put each sample where it goes and each gap into a scratch buffer.
    private func gatheredRead(_ samples: ArraySlice<MediaSample>, into destination: UnsafeMutableRawPointer) -> PackagerError? {
        guard let descriptor else { return nil }
        var scratch = [UInt8](repeating: 0, count: Self.maxGap)
        return scratch.withUnsafeMutableBytes { gap -> PackagerError? in
            guard let gapBase = gap.baseAddress else { return nil }
            var pieces: [iovec] = []
            pieces.reserveCapacity(64)
            var stretchStart = 0
            var stretchEnd = 0
            var lastIsSample = false
            func flush() -> PackagerError? {
                defer { pieces.removeAll(keepingCapacity: true) }
                guard !pieces.isEmpty else { return nil }
                let length = stretchEnd - stretchStart
                var result: Int
                repeat {
                    result = pieces.withUnsafeBufferPointer { preadv(descriptor, $0.baseAddress, Int32($0.count), off_t(stretchStart)) }
                } while result < 0 && errno == EINTR
                if result == length { return nil }
                if result < 0 { return .input(file: path, reason: "cannot read the file: \(String(cString: strerror(errno)))") }
                // Short: the file ended (it changed) or the kernel stopped early; finish piece by piece.
                var offset = stretchStart
                for piece in pieces {
                    if let base = piece.iov_base, let error = Self.readFully(descriptor, base, count: piece.iov_len, at: offset, path: path) { return error }
                    offset += piece.iov_len
                }
                return nil
            }
            var position = 0
            for sample in samples {
                let range = sample.fileRange ?? sample.data.indices  // an MP4 input's samples carry their file range
                let start = range.lowerBound
                let end = range.upperBound
                let gapLength = start - stretchEnd
                if !pieces.isEmpty, gapLength >= 0, gapLength <= Self.maxGap, pieces.count + 2 <= 1024 {
                    if gapLength > 0 {
                        pieces.append(iovec(iov_base: gapBase, iov_len: gapLength))
                        lastIsSample = false
                    }
                    if lastIsSample, let last = pieces.indices.last {
                        pieces[last].iov_len += end - start  // packed right after the previous sample
                    } else {
                        pieces.append(iovec(iov_base: destination + position, iov_len: end - start))
                    }
                } else {
                    if let error = flush() { return error }
                    stretchStart = start
                    pieces.append(iovec(iov_base: destination + position, iov_len: end - start))
                }
                lastIsSample = true
                stretchEnd = end
                position += end - start
            }
            return flush()
        }
    }

    /// `samples` with their bytes: as they are for an input in memory; otherwise read into `buffer` (see
    /// ``read(_:into:)``) and sliced from it. Drop the result before the next call, so that the buffer is reused, not copied.
    func samples(_ samples: ArraySlice<MediaSample>, into buffer: inout [UInt8]) throws(PackagerError) -> ArraySlice<MediaSample> {
        guard descriptor != nil else { return samples }
        _ = try read(samples, into: &buffer)
        var position = 0
        var loaded: [MediaSample] = []
        loaded.reserveCapacity(samples.count)
        for sample in samples {
            var copy = sample
            copy.data = buffer[position..<(position + sample.byteCount)]
            copy.fileRange = nil
            position += copy.data.count
            loaded.append(copy)
        }
        return loaded[...]
    }

    /// Boxes an MP4 or MOV file may start with.
    static let topLevelBoxes: Set<String> = ["ftyp", "moov", "mdat", "free", "skip", "wide", "pnot", "uuid", "styp", "sidx", "moof", "pdin"]

    /// Top-level boxes read at most (a file of more is not media: its layout would be read without end).
    static let maxTopLevelBoxes = 1_000_000

    /// The largest `moov` or `moof` read (a day of 60 fps video with a sample table of 16 bytes a frame is ~83 MB): a
    /// larger one is not a movie's metadata, and reading it would take that much memory.
    static let maxMetadataBox = 1 << 30

    /// Top-level boxes whose payload the demuxer reads: the movie and the fragments' metadata. Of every other
    /// box (`mdat`, `free`, `skip`, `uuid`, …) only the header is read.
    static let metadataBoxes: Set<String> = ["moov", "moof"]

    /// The file's layout: every top-level box header is read, and the whole of each of ``metadataBoxes``; nothing
    /// else (the media data, a large `free` or unknown box) is read or held, so memory does not grow with the file.
    /// A box whose size does not fit the file is an error, as the demuxer would report it.
    private static func layout(_ descriptor: Int32, size: Int, path: String) throws(PackagerError) -> MP4Layout {
        var boxes: [MP4Layout.Box] = []
        var offset = 0
        var count = 0
        while size - offset >= 8 {
            count += 1
            guard count <= maxTopLevelBoxes else { throw .input(file: path, reason: "more than \(maxTopLevelBoxes) top-level boxes") }
            // Enough for any header (64-bit size and a uuid's extended type); the box is placed within the file.
            let header = try read(descriptor, count: min(32, size - offset), at: offset, path: path)
            let box: MP4Box
            do { box = try MP4Box.header(of: header, at: 0, end: size - offset) } catch {
                let named = String(decoding: header[4..<8], as: UTF8.self)  // the loop leaves at least 8 bytes
                throw .input(file: path, reason: "\(MediaError.malformed("box '\(named)' at offset \(offset) has a size that does not fit the file"))")
            }
            let (type, boxSize) = (box.type.description, box.size)
            if metadataBoxes.contains(type) {
                guard boxSize <= maxMetadataBox else {
                    throw .input(file: path, reason: "the '\(type)' box at offset \(offset) is \(boxSize) bytes, more than the \(maxMetadataBox >> 20) MB metadata may take")
                }
                boxes.append(MP4Layout.Box(type: type, offset: offset, bytes: try read(descriptor, count: boxSize, at: offset, path: path)))
            }
            offset += boxSize
        }
        return MP4Layout(fileSize: size, boxes: boxes)
    }

    /// `count` bytes of the file from `offset` into a new array.
    private static func read(_ descriptor: Int32, count: Int, at offset: Int, path: String) throws(PackagerError) -> [UInt8] {
        var failure: PackagerError?
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            initialized = 0
            guard let base = buffer.baseAddress else { return }
            failure = readFully(descriptor, base, count: count, at: offset, path: path)
            initialized = failure == nil ? count : 0
        }
        if let failure { throw failure }
        return bytes
    }

    /// Reads exactly `count` bytes at `offset` into `destination`; an error if the file ends first (it changed).
    private static func readFully(_ descriptor: Int32, _ destination: UnsafeMutableRawPointer, count: Int, at offset: Int,
                                  path: String) -> PackagerError? {
        var done = 0
        while done < count {
            let result = pread(descriptor, destination + done, count - done, off_t(offset + done))
            if result > 0 {
                done += result
            } else if result == 0 {
                return .input(file: path, reason: "the file ended at \(offset + done) bytes while it was read: it changed")
            } else if errno != EINTR {
                return .input(file: path, reason: "cannot read the file: \(String(cString: strerror(errno)))")
            }
        }
        return nil
    }
}
