/// A single `Range: bytes=…` request (RFC 9110 §14.1.2) resolved against a file's size.
public enum ByteRangeRequest {
    /// The range `Range` asks for in a file of `size` bytes: nil for the whole file (no header, several ranges,
    /// or a unit other than bytes: a server may then answer 200), a closed range, or `rangeNotSatisfiable`.
    public static func resolve(_ header: String?, size: Int64) throws(PlaybackError) -> ClosedRange<Int64>? {
        guard let header, header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let spec = header.dropFirst(6).trimmingCharacters(in: .whitespaces)
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2 else { return nil }
        if parts[0].isEmpty {
            // A suffix: the last N bytes.
            guard let suffix = Int64(parts[1]), suffix > 0 else { throw .rangeNotSatisfiable(size: size) }
            guard size > 0 else { throw .rangeNotSatisfiable(size: size) }
            return max(0, size - suffix)...(size - 1)
        }
        guard let first = Int64(parts[0]), first >= 0 else { return nil }
        guard first < size else { throw .rangeNotSatisfiable(size: size) }
        if parts[1].isEmpty { return first...(size - 1) }
        guard let last = Int64(parts[1]), last >= first else { return nil }
        return first...min(last, size - 1)
    }
}
