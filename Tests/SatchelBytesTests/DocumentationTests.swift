import Foundation
import SatchelSystem
import Testing

/// The libraries an app embeds document what they offer: every public declaration of a library product has a doc
/// comment (`scripts/docs` then builds the documentation with warnings as errors). An implementation of a protocol's
/// requirement — Satchel's protocols, or the standard ones (`description`, `==`, `encode(to:)`, …) — needs none:
/// the documentation lists it under the protocol with the protocol's words.
@Suite("Documentation: every public declaration of the libraries")
struct DocumentationTests {
    static let standardRequirements: Set<String> = [
        "description", "debugDescription", "encode", "init", "hash", "makeIterator", "handle", "prepare", "revert", "response", "next",
        "handlerRemoved", "write", "OutboundIn", "OutboundOut", "coreContext", "identity", "code", "httpStatus", "problemType", "problemDetail",
        "now", "errorDescription", "id", "rawValue",
    ]

    /// The library products' targets, from Package.swift.
    static func libraries() throws -> [String] {
        let manifest = try ArchitectureTests.read("Package.swift")
        return manifest.matches(of: try Regex(#"\.library\(name: "(\w+)""#)).compactMap { $0.output[1].substring.map(String.init) }
    }

    /// The names of the requirements of every protocol in Sources.
    static func requirements() throws -> Set<String> {
        let body = try Regex(#"protocol\s+\w+[^{]*\{(.*?)\n\}"#).dotMatchesNewlines()
        let member = try Regex(#"(?:func|var|init)\s*([A-Za-z_]\w*)?"#)
        var names: Set<String> = []
        for module in try ArchitectureTests.sourceModules() {
            for file in ArchitectureTests.swiftFiles(in: module) {
                let text = try String(contentsOf: file, encoding: .utf8)
                for declaration in text.matches(of: body) {
                    guard let inside = declaration.output[1].substring else { continue }
                    for match in inside.matches(of: member) { names.insert(match.output[1].substring.map(String.init) ?? "init") }
                }
            }
        }
        return names
    }

    @Test("every public declaration of a library product has a doc comment (a protocol requirement's implementation apart)")
    func publicDeclarationsDocumented() async throws {
        let undocumented = try await OwnThread.run { () throws -> [String] in
            let declaration = try Regex(#"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:public|open)\s+(?:(?:static|final|override|mutating|nonisolated|indirect|convenience|required|private\(set\))\s+)*(func|var|let|init|struct|enum|class|actor|protocol|typealias|case|subscript)\b\s*([A-Za-z_]\w*)?"#)
            let exempt = Self.standardRequirements.union(try Self.requirements())
            var undocumented: [String] = []
            for module in try Self.libraries() {
                for file in ArchitectureTests.swiftFiles(in: module) {
                    let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
                    for (index, line) in lines.enumerated() {
                        guard let match = line.firstMatch(of: declaration) else { continue }
                        let kind = match.output[1].substring ?? ""
                        guard let name = kind == "init" ? "init" : match.output[2].substring.map(String.init) else { continue }  // an operator
                        var above = index - 1
                        while above >= 0, lines[above].trimmingCharacters(in: .whitespaces).hasPrefix("@") { above -= 1 }
                        let previous = above >= 0 ? lines[above].trimmingCharacters(in: .whitespaces) : ""
                        if previous.hasPrefix("///") || previous.hasSuffix("*/") || exempt.contains(name) { continue }
                        undocumented.append("\(module)/\(file.lastPathComponent):\(index + 1): \(line.trimmingCharacters(in: .whitespaces).prefix(80))")
                    }
                }
            }
            return undocumented
        }
        #expect(undocumented.isEmpty, "\(undocumented.count) undocumented: \(undocumented.prefix(40))")
    }

    @Test("no doc comment of a library, nor its catalog, cites a document the repository does not hold (the project's seed documents, its issues): the public specification is named, or it is said in plain words")
    func documentationCitesPublicSources() async throws {
        let citing = try await OwnThread.run { () throws -> [String] in
            let unpublished = try Regex(#"\b[Ss]eeds? 00\d|\bissue \d+\b"#)
            var citing: [String] = []
            for module in try Self.libraries() {
                let folder = URL(fileURLWithPath: "Sources/\(module)")
                let catalogs = (FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)?.allObjects as? [URL] ?? []).filter { $0.pathExtension == "md" }
                for file in ArchitectureTests.swiftFiles(in: module) + catalogs {
                    let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
                    for (index, line) in lines.enumerated() where (file.pathExtension == "md" || line.trimmingCharacters(in: .whitespaces).hasPrefix("///"))
                        && line.contains(unpublished) {
                        citing.append("\(module)/\(file.lastPathComponent):\(index + 1)")
                    }
                }
            }
            return citing
        }
        #expect(citing.isEmpty, "\(citing.count) cite internal documents: \(citing.prefix(40))")
    }

    @Test("each library has a documentation catalog whose landing page is the module's")
    func catalogs() throws {
        for module in try Self.libraries() {
            let page = try ArchitectureTests.read("Sources/\(module)/\(module).docc/\(module).md")
            #expect(page.hasPrefix("# ``\(module)``\n"), "\(module)")
        }
    }
}
