import Foundation
import SatchelMedia

/// Reads input files and demuxes them into tracks.
enum InputReader {
    /// The whole file, read with one copy from the page cache into the array.
    static func readFile(_ path: String) throws(PackagerError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .input(file: path, reason: "cannot open the file: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { throw .input(file: path, reason: "not a regular file") }
        let size = Int(info.st_size)
        var failed = false
        let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            count = 0
            guard let base = buffer.baseAddress else { return }
            #if os(Linux)
            // Ask for transparent huge pages: a large input otherwise costs one page fault per 4 KiB.
            let pageSize = 4096
            let start = (Int(bitPattern: base) + pageSize - 1) & ~(pageSize - 1)
            let length = (Int(bitPattern: base) + size - start) & ~(pageSize - 1)
            if length > 2 << 20, let aligned = UnsafeMutableRawPointer(bitPattern: start) {
                _ = madvise(aligned, length, 14)  // MADV_HUGEPAGE
            }
            #endif
            while count < size {
                let result = read(descriptor, base + count, size - count)
                if result > 0 { count += result } else if result == 0 || errno != EINTR { failed = result != 0; break }
            }
        }
        if failed { throw .input(file: path, reason: "cannot read the file") }
        return bytes
    }

    /// Boxes an MP4 or MOV file may start with.
    static let topLevelBoxes: Set<String> = ["ftyp", "moov", "mdat", "free", "skip", "wide", "pnot", "uuid", "styp", "sidx", "moof", "pdin"]

    /// The tracks of one input file, sniffing MP4/MOV or MPEG-TS.
    static func tracks(of path: String) throws(PackagerError) -> [MediaTrack] {
        let bytes = try readFile(path)
        guard bytes.count >= 8 else { throw .input(file: path, reason: "the file is too short to be media") }
        let isTS = bytes[0] == 0x47 && (bytes.count < 189 || bytes[188] == 0x47)
        let firstBox = String(decoding: bytes[4..<8], as: UTF8.self)
        guard isTS || Self.topLevelBoxes.contains(firstBox) else { throw .input(file: path, reason: "not an MP4, MOV or MPEG-TS file") }
        do {
            if isTS { return try TSDemuxer.demux(bytes) }
            return try MP4Demuxer.demux(bytes)
        } catch {
            throw .input(file: path, reason: "\(error)")
        }
    }
}
