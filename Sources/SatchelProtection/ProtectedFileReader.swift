import SatchelBytes

/// Where a protected file's bytes come from: a local file, an HTTP resource read with range requests, memory.
public protocol ProtectedByteSource: Sendable {
    /// The source's size in bytes.
    func size() async throws -> UInt64
    /// Up to `count` bytes from `offset` (fewer only at the end).
    func read(offset: UInt64, count: Int) async throws -> [UInt8]
}

/// Bytes in memory as a source.
package struct MemoryByteSource: ProtectedByteSource {
    /// The bytes.
    package let bytes: [UInt8]

    /// A source over `bytes`.
    package init(_ bytes: [UInt8]) { self.bytes = bytes }

    package func size() async throws -> UInt64 { UInt64(bytes.count) }

    package func read(offset: UInt64, count: Int) async throws -> [UInt8] {
        guard offset < UInt64(bytes.count), count > 0 else { return [] }
        let start = Int(offset)
        return Array(bytes[start..<min(bytes.count, start + count)])
    }
}

/// A protected file read by random access: ``read(_:)`` opens only the chunks a range touches, so a large file on an
/// origin is never fetched whole. Opened with its key: a wrong key is ``ProtectionError/wrongKey``; a changed header,
/// a file cut short or extended, a changed or moved chunk are ``ProtectionError/integrity(chunk:)``.
public struct ProtectedFileReader: Sendable {
    /// The file's header.
    public let header: ProtectedFileHeader
    let key: SecretBytes
    let source: any ProtectedByteSource

    /// Opens `source` with `key`: reads and checks its header and its size.
    public static func open(_ source: any ProtectedByteSource, key: SecretBytes) async throws -> ProtectedFileReader {
        let size = try await source.size()
        let header = try ProtectedFileHeader.parse(try await source.read(offset: 0, count: Int(min(size, UInt64(ProtectedFileHeader.maximumLength)))))
        try header.verify(key)
        if size != header.fileSize {
            // Cut short: the first chunk not whole; extended: the last (its end is not the file's).
            let body = size > UInt64(header.length) ? size - UInt64(header.length) : 0
            let whole = body / UInt64(header.chunkSize + ProtectedFileHeader.tagLength)
            throw ProtectionError.integrity(chunk: Int(clamping: size < header.fileSize ? min(whole, header.chunkCount - 1) : header.chunkCount - 1))
        }
        return ProtectedFileReader(header: header, key: key, source: source)
    }

    /// The chunks holding the plain bytes of `range` (clamped to the content).
    public func chunks(for range: Range<UInt64>) -> ClosedRange<UInt64>? {
        let end = min(range.upperBound, header.plainSize)
        guard range.lowerBound < end else { return nil }
        let size = UInt64(header.chunkSize)
        return (range.lowerBound / size)...((end - 1) / size)
    }

    /// The plain bytes of `range` (clamped to the content; past its end, none).
    public func read(_ range: Range<UInt64>) async throws -> [UInt8] {
        guard let chunks = chunks(for: range) else { return [] }
        var plain: [UInt8] = []
        plain.reserveCapacity(Int(min(range.upperBound, header.plainSize) - range.lowerBound))
        for index in chunks {
            let bytes = try await chunk(index)
            let start = index * UInt64(header.chunkSize)
            let from = Int(max(range.lowerBound, start) - start)
            let to = Int(min(min(range.upperBound, header.plainSize), start + UInt64(bytes.count)) - start)
            plain.append(contentsOf: bytes[from..<to])
        }
        return plain
    }

    /// The plain bytes of chunk `index`.
    public func chunk(_ index: UInt64) async throws -> [UInt8] {
        guard index < header.chunkCount else { throw ProtectionError.integrity(chunk: Int(clamping: index)) }
        let length = header.plainLength(ofChunk: index) + ProtectedFileHeader.tagLength
        let sealed = try await source.read(offset: header.offset(ofChunk: index), count: length)
        return try ProtectedChunks.open(sealed, index: index, header: header, key: key)
    }
}
