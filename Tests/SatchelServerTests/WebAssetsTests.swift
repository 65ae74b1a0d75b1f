import Foundation
@testable import SatchelServer
import Testing

/// The server's web files are read through the no-follow seam: a link placed among them is refused, never followed.
@Suite("Web assets")
struct WebAssetsTests {
    static let web = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/SatchelServer/Web")

    /// A copy of the web folder, and the name of one player file in it.
    static func copy() throws -> (URL, String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("satchel-web-\(UUID().uuidString)")
        try FileManager.default.copyItem(at: web, to: folder)
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("player").path).sorted().first)
        return (folder, name)
    }

    @Test("the copied folder loads; a player file, a template or the OpenAPI document replaced by a link (to a secret outside, or to a file beside it) is refused")
    func links() throws {
        let (folder, name) = try Self.copy()
        defer { try? FileManager.default.removeItem(at: folder) }
        let assets = try WebAssets(folder: folder)
        #expect(assets.player[name] != nil)
        let secret = folder.deletingLastPathComponent().appendingPathComponent("satchel-web-secret-\(UUID().uuidString)")
        try "kek".write(to: secret, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: secret) }
        let template = try #require(try FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("templates").path)
            .first { $0.hasSuffix(".mustache") })
        for (relative, target) in [("player/\(name)", secret.path), ("templates/\(template)", secret.path), ("openapi.json", folder.appendingPathComponent("player/\(name)").path)] {
            let (copy, _) = try Self.copy()
            defer { try? FileManager.default.removeItem(at: copy) }
            let path = copy.appendingPathComponent(relative).path
            try FileManager.default.removeItem(atPath: path)
            try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
            #expect(throws: WebAssetsError.self, "\(relative) as a link") { try WebAssets(folder: copy) }
        }
    }
}
