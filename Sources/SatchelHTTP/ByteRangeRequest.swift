import Foundation
import SatchelBytes

/// A single `Range: bytes=…` request (RFC 9110 §14.1.2) resolved against a file's size.
public enum ByteRangeRequest {
    /// The range `Range` asks for in a file of `size` bytes: nil for the whole file (no header, several ranges,
    /// or a unit other than bytes: a server may then answer 200), a closed range, or ``RangeNotSatisfiable``.
    public static func resolve(_ header: String?, size: Int64) throws(RangeNotSatisfiable) -> ClosedRange<Int64>? {
        guard let header, header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let spec = header.dropFirst(6).trimmingCharacters(in: .whitespaces)
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2 else { return nil }
        if parts[0].isEmpty {
            // A suffix: the last N bytes.
            guard let suffix = Int64(parts[1]), suffix > 0 else { throw RangeNotSatisfiable(size: size) }
            guard size > 0 else { throw RangeNotSatisfiable(size: size) }
            return max(0, size - suffix)...(size - 1)
        }
        guard let first = Int64(parts[0]), first >= 0 else { return nil }
        guard first < size else { throw RangeNotSatisfiable(size: size) }
        if parts[1].isEmpty { return first...(size - 1) }
        guard let last = Int64(parts[1]), last >= first else { return nil }
        return first...min(last, size - 1)
    }
}

/// A byte range that lies outside the file (416; the answer's `Content-Range` is `bytes */size`).
public struct RangeNotSatisfiable: ProblemConvertible, Equatable {
    /// The file's size.
    public let size: Int64

    /// The refusal for a file of `size` bytes.
    public init(size: Int64) { self.size = size }

    public var code: String { "range-not-satisfiable" }
    public var httpStatus: Int { 416 }
    public var description: String { "the range lies outside the file's \(size) bytes" }
}
