import Foundation
import SatchelProtection
import SatchelSystem

/// A local file as a protected file's byte source: opened once without following a link (a `ConfinedFile`), read
/// where asked.
public final class LocalByteSource: ProtectedByteSource, Sendable {
    private let file: ConfinedFile

    /// Opens `path` for reading.
    public init(path: String) throws(ConfinedFile.Failure) {
        let url = URL(fileURLWithPath: path)
        file = try ConfinedFile.open(url.lastPathComponent, below: url.deletingLastPathComponent().path)
    }

    public func size() async throws -> UInt64 { UInt64(file.size) }

    public func read(offset: UInt64, count: Int) async throws -> [UInt8] {
        guard count > 0, offset < UInt64(file.size) else { return [] }
        return try file.read(Int(min(UInt64(count), UInt64(file.size) - offset)), at: Int64(offset))
    }
}
