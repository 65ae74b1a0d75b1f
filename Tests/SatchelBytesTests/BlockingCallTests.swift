import Foundation
import SatchelSystem
import Testing

/// Issue 48, point 2: no call that blocks a thread runs in async code (where it holds one of the task pool's few
/// threads, or an event loop's one), in Sources or in the tests' code. `DispatchQueue.global()` is refused anywhere
/// (on Linux its threads are the task pool's). A line may keep such a call with `// blocking-ok: <why>`.
@Suite("Blocking calls")
struct BlockingCallTests {
    /// The calls refused in async code, and whether they are refused anywhere.
    static let refused: [(pattern: String, anywhere: Bool)] = [
        ("DispatchQueue.global(", true), ("Thread.sleep(", false), ("usleep(", false), ("waitUntilExit(", false),
        ("Data(contentsOf:", false), (".wait()", false),
    ]

    /// Words before a brace that open async code (a task, a task group's closure), and synchronous code whatever
    /// encloses it (a thread, a Dispatch queue, a callback, an accessor, the tests' helpers that run a closure on a
    /// thread of its own).
    static let asyncWords: Set<String> = ["Task", "addTask", "addTaskUnlessCancelled", "detached"]
    static let syncWords: Set<String> = ["Thread", "DispatchQueue", "concurrentPerform", "execute", "deinit", "get", "set", "atexit",
                                         "onTermination", "readabilityHandler", "terminationHandler",
                                         "offloaded"]

    /// The lines of `text` (a Swift file) that call a refused function where it is refused, unmarked.
    static func findings(in text: String) -> [(line: Int, call: String)] {
        let code = ArchitectureTests.code(text)
        let raw = text.split(separator: "\n", omittingEmptySubsequences: false)
        var scopes: [Bool] = [false]  // each open brace: whether its code is async
        var found: [(Int, String)] = []
        var previous = ""
        for (index, line) in code.enumerated() {
            let marked = index < raw.count && raw[index].contains("blocking-ok:")
            let characters = Array(line)
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            // A signature continued from the line before (its parameters, `async`, `throws`, the result).
            let continued = [")", "->", "async", "throws"].contains(where: trimmed.hasPrefix) ? previous : ""
            // Where each refused call starts on the line (found once, by the string search, not at every character).
            var calls: [Int: (pattern: String, anywhere: Bool)] = [:]
            if !marked {
                for refusal in refused {
                    var from = line.startIndex
                    while let range = line.range(of: refusal.pattern, range: from..<line.endIndex) {
                        calls[line.distance(from: line.startIndex, to: range.lowerBound)] = refusal
                        from = range.upperBound
                    }
                }
            }
            for position in characters.indices where calls[position] != nil || characters[position] == "{" || characters[position] == "}" {
                if let refusal = calls[position], refusal.anywhere || (scopes.last ?? false),
                   !(refusal.pattern == ".wait()" && String(characters[..<position]).contains("await ")) {  // an async wait
                    found.append((index + 1, refusal.pattern))
                }
                if characters[position] == "{" {
                    let before = continued + String(characters[..<position])
                    let segment = before.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "{" || $0 == "}" }).last.map(String.init) ?? before
                    let after = String(characters[(position + 1)...]).split(separator: "{", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
                    scopes.append(kind(segment: segment, closureSignature: after, inside: scopes.last ?? false))
                } else if characters[position] == "}", scopes.count > 1 {
                    scopes.removeLast()
                }
            }
            previous = String(line)
        }
        return found
    }

    static func words(_ text: String) -> [String] {
        text.split(whereSeparator: { !$0.isLetter && !$0.isNumber && $0 != "_" }).map(String.init)
    }

    /// Whether code in a brace is async: `segment` is what precedes the brace (since the last brace), `closureSignature`
    /// what follows it on its line, `async` whether the enclosing code is.
    static func kind(segment: String, closureSignature: String, inside async: Bool) -> Bool {
        let signature = words(closureSignature)
        if let end = signature.firstIndex(of: "in"), signature[..<end].contains("async") { return true }
        let before = words(segment)
        if before.contains("func") || before.contains("init") { return before.contains("async") }
        if before.contains("var"), !segment.contains("=") { return false }  // a computed property
        if before.contains(where: { syncWords.contains($0) }) { return false }
        if before.contains(where: { asyncWords.contains($0) || $0.hasSuffix("TaskGroup") }) { return true }
        return async
    }

    @Test("the scanner finds a call in an async function, a task and an async closure, and not in a synchronous one or a thread")
    func scanner() {
        let sample = """
            func sync() { usleep(1) }
            func run() async {
                if true { usleep(1) }
                Thread { usleep(1) }.start()
                let x = [1].map { _ in Data(contentsOf: url) }
                usleep(2)  // blocking-ok: a test of the marker
            }
            func later() {
                Task { Thread.sleep(forTimeInterval: 1) }
                let work: () async -> Void = { () async in process.waitUntilExit() }
                DispatchQueue.global().async {}
            }
            """
        let lines = Self.findings(in: sample).map(\.line)
        #expect(lines == [3, 5, 9, 10, 11], "\(Self.findings(in: sample))")
    }

    @Test("no blocking call in async code in Sources or the tests, unless marked with why")
    func noBlockingCalls() async throws {
        // Seconds of reading and scanning: on a thread of its own, not one of the task pool's.
        let offences = try await OwnThread.run { () throws -> [String] in
            var offences: [String] = []
            for folder in ["Sources", "Tests"] {
                let directory = ArchitectureTests.root.appendingPathComponent(folder)
                let walker = FileManager.default.enumerator(atPath: directory.path)
                while let path = walker?.nextObject() as? String {
                    guard path.hasSuffix(".swift"), !path.hasSuffix("BlockingCallTests.swift") else { continue }
                    let text = try String(contentsOf: directory.appendingPathComponent(path), encoding: .utf8)
                    offences += Self.findings(in: text).map { "\(folder)/\(path):\($0.line): \($0.call)" }
                }
            }
            return offences
        }
        #expect(offences.isEmpty, "blocking calls in async code (move them to a thread of their own, or mark the line `// blocking-ok: why`):\n\(offences.joined(separator: "\n"))")
    }
}
