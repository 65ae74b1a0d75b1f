import Foundation
import SatchelSystem
import Testing

/// The structure ARCHITECTURE.md describes, checked against the sources.
@Suite("Architecture: layers, error codes, the layout table")
struct ArchitectureTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func read(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// Rows of the first markdown table under `heading` whose first cells match `pattern` (the cells, split).
    static func tableRows(_ text: String, under heading: String) -> [[String]] {
        guard let start = text.range(of: "\n" + heading + "\n") else { return [] }
        var rows: [[String]] = []
        var inTable = false
        for line in text[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("|") {
                inTable = true
                let cells = line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast()
                    .map { $0.trimmingCharacters(in: .whitespaces) }
                if cells.first?.hasPrefix("---") == false { rows.append(cells) }
            } else if inTable {
                break
            }
        }
        return Array(rows.dropFirst())  // the header
    }

    /// Module name → layer, from ARCHITECTURE.md's module table (the one list of layers).
    static func layers() throws -> [String: Int] {
        var layers: [String: Int] = [:]
        for row in tableRows(try read("ARCHITECTURE.md"), under: "## Modules") where row.count >= 2 {
            guard let layer = Int(row[0]) else { continue }
            layers[row[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))] = layer
        }
        return layers
    }

    static func sourceModules() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Sources").path).filter { !$0.hasPrefix(".") }.sorted()
    }

    static func swiftFiles(in module: String) -> [URL] {
        let directory = root.appendingPathComponent("Sources/\(module)")
        let walker = FileManager.default.enumerator(atPath: directory.path)
        var files: [URL] = []
        while let path = walker?.nextObject() as? String {
            if path.hasSuffix(".swift") { files.append(directory.appendingPathComponent(path)) }
        }
        return files
    }

    @Test("every module in Sources has a layer, and none imports a module of a higher layer")
    func layering() async throws {
        let layers = try Self.layers()
        #expect(layers.count >= 10, "the module table was read")
        let violations = try await OwnThread.run { () throws -> [String] in
            var violations: [String] = []
            for module in try Self.sourceModules() {
                guard let layer = layers[module] else {
                    violations.append("\(module) is not in ARCHITECTURE.md's module table")
                    continue
                }
                for file in Self.swiftFiles(in: module) {
                    for line in try String(contentsOf: file, encoding: .utf8).split(separator: "\n") where line.hasPrefix("import ") || line.hasPrefix("@testable import ") {
                        let name = String(line.split(separator: " ").last ?? "")
                        if let imported = layers[name], imported > layer {
                            violations.append("\(module) (layer \(layer)) imports \(name) (layer \(imported)) in \(file.lastPathComponent)")
                        }
                    }
                }
            }
            return violations
        }
        #expect(violations.isEmpty, "\(violations.joined(separator: "\n"))")
    }

    @Test("every error type in Sources adopts ProblemConvertible (a stable code, an HTTP status, a safe detail)")
    func errorCodes() async throws {
        let missing = try await OwnThread.run { () throws -> [String] in
            var missing: [String] = []
            let declaration = try NSRegularExpression(pattern: #"(?m)^\s*(?:public |internal |private |fileprivate )?(?:final )?(?:enum|struct|class) (\w+)\s*:\s*([^{]+)\{"#)
            for module in try Self.sourceModules() {
                for file in Self.swiftFiles(in: module) {
                    let text = try String(contentsOf: file, encoding: .utf8)
                    for match in declaration.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                        guard let name = Range(match.range(at: 1), in: text), let conformances = Range(match.range(at: 2), in: text) else { continue }
                        let list = text[conformances].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                        if list.contains(where: { $0 == "Error" || $0.hasSuffix("Error") && $0 != "HTTPResponseError" }) && !list.contains("ProblemConvertible") {
                            missing.append("\(module).\(text[name])")
                        }
                    }
                }
            }
            return missing
        }
        #expect(missing.isEmpty, "\(missing)")
    }

    @Test("README's layout table names exactly the modules of ARCHITECTURE.md")
    func readmeLayout() throws {
        let architecture = Set(try Self.layers().keys)
        let readme = Set(Self.tableRows(try Self.read("README.md"), under: "## Layout").compactMap { $0.first?.trimmingCharacters(in: CharacterSet(charactersIn: "`")) })
        #expect(readme == architecture, "README only: \(readme.subtracting(architecture)); ARCHITECTURE.md only: \(architecture.subtracting(readme))")
        #expect(architecture == Set(try Self.sourceModules()), "ARCHITECTURE.md lists exactly the modules in Sources")
    }

    /// Package.swift's targets: each one's name and the text that declares it (its dependencies among it).
    static func packageTargets() throws -> [(name: String, text: Substring)] {
        let manifest = try read("Package.swift")
        let starts = manifest.ranges(of: try Regex(#"\.(target|executableTarget|testTarget)\("#)).map(\.lowerBound) + [manifest.endIndex]
        var targets: [(String, Substring)] = []
        for (start, end) in zip(starts, starts.dropFirst()) {
            let text = manifest[start..<end]
            guard let match = text.firstMatch(of: try Regex(#"name:\s*"([^"]+)""#)), let name = match.output[1].substring else { continue }
            targets.append((String(name), text))
        }
        return targets
    }

    @Test("every module imports only what Package.swift declares it depends on (or the system's own modules)")
    func declaredImports() async throws {
        let undeclared = try await OwnThread.run { () throws -> [String] in
            let system: Set<String> = ["Foundation", "FoundationNetworking", "Dispatch", "Glibc", "Musl", "Darwin", "Security", "Network", "AVFoundation", "Testing", "Synchronization"]
            var undeclared: [String] = []
            for (name, text) in try Self.packageTargets() {
                // A module's own name is not a dependency: importing itself is a warning (and a sign of a file moved without care).
                let declared = Set(text.matches(of: try Regex(#""([A-Za-z0-9_]+)""#)).compactMap { $0.output[1].substring.map(String.init) })
                    .subtracting([name])
                // A dependency named twice is a warning of SwiftPM's (and a clean build must have none).
                let named = text.matches(of: try Regex(#""(Satchel[A-Za-z0-9_]+)""#)).compactMap { $0.output[1].substring.map(String.init) }
                for module in Set(named) where named.filter({ $0 == module }).count > 1 { undeclared.append("\(name) names \(module) twice") }
                let folder = ["Sources/\(name)", "Tests/\(name)"].map { Self.root.appendingPathComponent($0) }
                    .first { FileManager.default.fileExists(atPath: $0.path) }
                guard let folder, let walker = FileManager.default.enumerator(atPath: folder.path) else { continue }
                while let path = walker.nextObject() as? String {
                    guard path.hasSuffix(".swift") else { continue }
                    // Imports stand at the start of a line (an indented "import" is text in a string: a Python snippet).
                    for line in try String(contentsOf: folder.appendingPathComponent(path), encoding: .utf8).split(separator: "\n")
                    where line.hasPrefix("import ") || line.hasPrefix("@testable import ") {
                        let module = String(line.split(separator: " ").last ?? "")
                        if !system.contains(module), !declared.contains(module) { undeclared.append("\(name) imports \(module) (\(path))") }
                    }
                }
            }
            return undeclared
        }
        #expect(undeclared.isEmpty, "\(undeclared.joined(separator: "\n"))")
    }

    @Test("Package.swift's layer comments and ARCHITECTURE.md's module table give every module the same layer")
    func packageLayers() throws {
        let layers = try Self.layers()
        let manifest = try Self.read("Package.swift")
        var commented: [String: Int] = [:]
        for match in manifest.matches(of: try Regex(#"// Layer (\d+):[^\n]*\n(?:\s*//[^\n]*\n)*\s*\.(?:target|executableTarget)\(\s*name:\s*"([^"]+)""#)) {
            guard let layer = match.output[1].substring.flatMap({ Int($0) }), let name = match.output[2].substring else { continue }
            commented[String(name)] = layer
        }
        for module in try Self.sourceModules() {
            #expect(commented[module] == layers[module], "\(module): Package.swift says layer \(commented[module].map(String.init) ?? "none"), ARCHITECTURE.md \(layers[module].map(String.init) ?? "none")")
        }
    }

    /// A Swift file's lines with string literals and comments blanked (so braces in them do not count).
    static func code(_ text: String) -> [Substring] {
        var out = ""
        var index = text.startIndex
        while index < text.endIndex {
            let rest = text[index...]
            if rest.hasPrefix("\"\"\"") {
                let end = rest.dropFirst(3).range(of: "\"\"\"")?.upperBound ?? text.endIndex
                out += String(repeating: "\n", count: text[index..<end].filter { $0 == "\n" }.count)
                index = end
            } else if rest.hasPrefix("//") {
                index = rest.firstIndex(of: "\n") ?? text.endIndex
            } else if text[index] == "\"" {
                var cursor = text.index(after: index)
                while cursor < text.endIndex, text[cursor] != "\"", text[cursor] != "\n" {
                    if text[cursor] == "\\" { cursor = text.index(after: cursor) }
                    if cursor < text.endIndex { cursor = text.index(after: cursor) }
                }
                index = cursor < text.endIndex ? text.index(after: cursor) : cursor
            } else {
                out.append(text[index])
                index = text.index(after: index)
            }
        }
        return out.split(separator: "\n", omittingEmptySubsequences: false)
    }

    @Test("no file in Sources is over 400 lines and no type over 300 (its declaration and extensions, its nested types apart)")
    func sizes() async throws {
        let (long, types) = try await OwnThread.run { () throws -> ([String], [String: Int]) in
            let declaration = try Regex(#"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|private|fileprivate|final|nonisolated|indirect)\s+)*(actor|class|struct|enum|extension|protocol)\s+([A-Za-z_][\w.]*)"#)
            var long: [String] = []
            var types: [String: Int] = [:]
            for module in try Self.sourceModules() {
                for file in Self.swiftFiles(in: module) {
                    let text = try String(contentsOf: file, encoding: .utf8)
                    let count = text.split(separator: "\n", omittingEmptySubsequences: false).count - (text.hasSuffix("\n") ? 1 : 0)
                    if count > 400 { long.append("\(module)/\(file.lastPathComponent): \(count) lines") }
                    var stack: [(name: String, start: Int, depth: Int)] = []
                    var depth = 0
                    for (number, line) in Self.code(text).enumerated() {
                        let opens = line.filter { $0 == "{" }.count, closes = line.filter { $0 == "}" }.count
                        if opens > 0, let match = line.firstMatch(of: declaration), let kind = match.output[1].substring, let name = match.output[2].substring {
                            let base = String(name.split(separator: ".").first ?? name)
                            let key = stack.last.map { kind == "extension" ? "\(module).\(base)" : "\($0.name).\(base)" } ?? "\(module).\(base)"
                            stack.append((key, number, depth))
                        }
                        depth += opens - closes
                        while let top = stack.last, depth <= top.depth, opens + closes > 0 {
                            stack.removeLast()
                            let length = number - top.start + 1
                            types[top.name, default: 0] += length
                            if let outer = stack.last { types[outer.name, default: 0] -= length }
                        }
                    }
                }
            }
            return (long, types)
        }
        #expect(long.isEmpty, "\(long)")
        let large = types.filter { $0.value > 300 }.map { "\($0.key): \($0.value) lines" }.sorted()
        #expect(large.isEmpty, "\(large)")
    }
}
