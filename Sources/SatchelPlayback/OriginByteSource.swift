import SatchelBytes
import SatchelProtection

/// A file on an origin as a protected file's byte source: every read a range request, so a large file is never
/// fetched whole; its size from the first answer's `Content-Range`.
public final class OriginByteSource: ProtectedByteSource, Sendable {
    /// Longer timeouts than a player's: a script reading a file waits for a slow origin rather than fail.
    private let fetcher = OriginFetcher(connectTimeout: .seconds(10), readTimeout: .seconds(60), deadline: .seconds(120))
    private let url: String
    private let headers: [String: String]
    private let known = Locked<UInt64?>(nil)

    /// The file at `url`, asked for with `headers` (never logged).
    public init(url: String, headers: [String: String] = [:]) {
        self.url = url
        self.headers = headers
    }

    public func size() async throws -> UInt64 {
        if let size = known.current { return size }
        let answer = try await fetcher.open(OriginFile(url: url, range: 0...0), headers: headers)
        _ = try await fetcher.collect(answer, limit: 1)
        guard let total = answer.total, total >= 0 else { throw PlaybackError.invalidContent("\(url): the origin does not answer byte ranges with the file's size") }
        known.withLock { $0 = UInt64(total) }
        return UInt64(total)
    }

    public func read(offset: UInt64, count: Int) async throws -> [UInt8] {
        let size = try await size()
        guard offset < size, count > 0 else { return [] }
        let last = min(size - 1, offset + UInt64(count) - 1)
        return try await fetcher.fetch(OriginFile(url: url, range: Int64(offset)...Int64(last)), headers: headers, limit: Int64(last - offset + 1))
    }

    /// Closes the connections.
    public func close() async { await fetcher.shutdown() }
}
