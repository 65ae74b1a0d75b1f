import Foundation
import SatchelAgent
import SatchelPackager
import SatchelProtection

/// Finds the device's license for a protected file by what the file is: the key ID in its header.
enum LicenseByKey {
    /// The header of the Satchel protected file at `path`, or nil when it is not one.
    static func header(ofFile path: String) async -> ProtectedFileHeader? {
        guard let source = try? LocalByteSource(path: path),
              let head = try? await source.read(offset: 0, count: ProtectedFileHeader.maximumLength),
              head.starts(with: ProtectedFileHeader.magic) else { return nil }
        return try? ProtectedFileHeader.parse(head)
    }

    /// The asset of the newest of `agent`'s licenses that holds `header`'s key, if any.
    static func asset(for header: ProtectedFileHeader, agent: Agent) async throws -> String? {
        let wanted = header.keyID.hex.lowercased()
        let holding = try await agent.licenses().filter { $0.license.keyIDs.contains { $0.lowercased() == wanted } }
        return holding.max { $0.license.acquired < $1.license.acquired }?.license.assetID
    }
}
