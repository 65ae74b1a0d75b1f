import AsyncHTTPClient
import Foundation
import NIOCore

/// Headless Chromium driven over the W3C WebDriver protocol (Debian's `chromium` and `chromedriver`), with no
/// client library: a session is a handful of JSON requests to chromedriver on loopback.
public final class WebDriver: @unchecked Sendable {
    private let process: Process
    private let client = HTTPClient(eventLoopGroupProvider: .singleton)
    private let announcements: URL
    private var base = ""
    private var session = ""
    private var released = false

    /// A WebDriver error (the command, and chromedriver's message).
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Starts chromedriver and a headless Chromium session with a `width`×`height` window. One browser runs at a
    /// time in the test process (the next `start` waits for the last one's ``quit()``): video decoding in
    /// software is heavy, and tests beside it have time limits.
    public static func start(width: Int = 1280, height: Int = 1000) async throws -> WebDriver {
        try TestMedia.require("chromium")
        try TestMedia.require("chromedriver")
        await BrowserSlot.shared.acquire()
        let driver: WebDriver
        do {
            driver = try await launched()
        } catch {
            await BrowserSlot.shared.release()
            throw error
        }
        do {
            let arguments = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--mute-audio",
                             "--autoplay-policy=no-user-gesture-required", "--window-size=\(width),\(height)"]
            let created = try await driver.command("POST", "/session", [
                "capabilities": ["alwaysMatch": ["browserName": "chrome",
                                                 "goog:chromeOptions": ["binary": TestMedia.which("chromium")?.path ?? "/usr/bin/chromium",
                                                                        "args": arguments]]],
            ])
            guard let id = (created as? [String: Any])?["sessionId"] as? String else { throw Failure(description: "no session: \(String(describing: created))") }
            driver.session = id
            _ = try await driver.command("POST", "/session/\(id)/timeouts", ["script": 60_000, "pageLoad": 60_000])
            return driver
        } catch {
            await driver.quit()
            throw error
        }
    }

    /// A chromedriver that answers ready. On a loaded machine it can start slowly or exit at once; up to three are
    /// tried, each given a minute, and the failure says what the last one printed.
    private static func launched() async throws -> WebDriver {
        var failures: [String] = []
        for _ in 0..<3 {
            let driver = try WebDriver()
            do {
                try await driver.waitUntilReady()
                return driver
            } catch {
                failures.append(String(describing: error))
                driver.process.terminate()
                try? await driver.client.shutdown()
            }
        }
        throw Failure(description: "chromedriver did not start (3 tries): " + failures.joined(separator: "; "))
    }

    /// Starts chromedriver on a port it chooses (`--port=0`; it prints the port), so it never meets another server.
    private init() throws {
        announcements = try TestMedia.temporaryDirectory("chromedriver").appendingPathComponent("stdout")
        _ = FileManager.default.createFile(atPath: announcements.path, contents: nil)
        process = Process()
        process.executableURL = TestMedia.which("chromedriver")
        process.arguments = ["--port=0"]
        let output = try FileHandle(forWritingTo: announcements)
        process.standardOutput = output
        process.standardError = output
        defer { try? output.close() }
        try process.run()
    }

    /// Waits for chromedriver's "started successfully on port N." line, then for its status to be ready.
    private func waitUntilReady() async throws {
        for _ in 0..<600 {
            if base.isEmpty, let text = try? String(contentsOf: announcements, encoding: .utf8),
               let range = text.range(of: "started successfully on port ") {
                let digits = text[range.upperBound...].prefix { $0.isNumber }
                if let port = Int(digits) { base = "http://127.0.0.1:\(port)" }
            }
            if !base.isEmpty, let status = try? await command("GET", "/status") as? [String: Any], status["ready"] as? Bool == true { return }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let printed = (try? String(contentsOf: announcements, encoding: .utf8)) ?? ""
        let state = process.isRunning ? "not ready after 60 s" : "exited with status \(process.terminationStatus)"
        throw Failure(description: "\(state), printing: \(printed.suffix(400).trimmingCharacters(in: .whitespacesAndNewlines))")
    }

    /// Sends one command; returns its `value`.
    @discardableResult
    private func command(_ method: String, _ path: String, _ body: [String: Any]? = nil) async throws -> Any? {
        var request = HTTPClientRequest(url: base + path)
        request.method = .init(rawValue: method)
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
        }
        let response = try await client.execute(request, timeout: .seconds(90))
        let bytes = try await response.body.collect(upTo: 64 << 20)
        let object = try JSONSerialization.jsonObject(with: Data(bytes.readableBytesView), options: [.fragmentsAllowed]) as? [String: Any]
        let value = object?["value"]
        if response.status.code >= 400 {
            let message = (value as? [String: Any])?["message"] as? String ?? "HTTP \(response.status.code)"
            throw Failure(description: "\(method) \(path): \(message.prefix(800))")
        }
        return value is NSNull ? nil : value
    }

    /// Opens `url`.
    public func open(_ url: String) async throws {
        try await command("POST", "/session/\(session)/url", ["url": url])
    }

    /// Runs `script` (a function body; `arguments` holds `arguments`) and returns what it returns.
    @discardableResult
    public func execute(_ script: String, _ arguments: [Any] = []) async throws -> Any? {
        try await command("POST", "/session/\(session)/execute/sync", ["script": script, "args": arguments])
    }

    /// Runs `script`, whose last argument is a callback it calls with its result.
    public func executeAsync(_ script: String, _ arguments: [Any] = []) async throws -> Any? {
        try await command("POST", "/session/\(session)/execute/async", ["script": script, "args": arguments])
    }

    /// Accepts the open `confirm`/`alert` dialog; returns its text.
    @discardableResult
    public func acceptAlert() async throws -> String {
        let text = try await command("GET", "/session/\(session)/alert/text") as? String ?? ""
        try await command("POST", "/session/\(session)/alert/accept", [:])
        return text
    }

    /// Polls `script` (returning a boolean) until it is true or `seconds` pass; returns whether it became true.
    public func wait(_ seconds: Double, until script: String) async throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try await execute(script) as? Bool == true { return true }
            try await Task.sleep(for: .milliseconds(200))
        }
        return try await execute(script) as? Bool == true
    }

    /// A PNG screenshot of the window, saved as a test artifact named `name` (see ``TestArtifacts``); returns its path.
    @discardableResult
    public func screenshot(_ name: String) async throws -> URL {
        guard let encoded = try await command("GET", "/session/\(session)/screenshot") as? String, let png = Data(base64Encoded: encoded) else {
            throw Failure(description: "no screenshot")
        }
        let url = TestArtifacts.directory.appendingPathComponent("\(name).png")
        try png.write(to: url)
        return url
    }

    /// Ends the session, chromedriver (and with it Chromium) and the HTTP client.
    public func quit() async {
        if !session.isEmpty { _ = try? await command("DELETE", "/session/\(session)") }
        // Process.waitUntilExit() can hang on a concurrency thread: poll, then kill.
        process.terminate()
        for _ in 0..<50 where process.isRunning { try? await Task.sleep(for: .milliseconds(100)) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? await client.shutdown()
        if !released {
            released = true
            await BrowserSlot.shared.release()
        }
    }
}

/// The one browser slot of the test process: a queue of tests waiting to start Chromium.
actor BrowserSlot {
    static let shared = BrowserSlot()
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// Returns when the slot is this caller's.
    func acquire() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    /// Hands the slot to the next waiting caller, or frees it.
    func release() {
        if waiting.isEmpty {
            busy = false
        } else {
            waiting.removeFirst().resume()
        }
    }
}

/// Where tests leave what a person looks at afterwards (screenshots): `$SATCHEL_TEST_ARTIFACTS`, else
/// `.build/test-artifacts/` in the package.
public enum TestArtifacts {
    public static let directory: URL = {
        let url = ProcessInfo.processInfo.environment["SATCHEL_TEST_ARTIFACTS"].map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent(".build/test-artifacts")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }()
}
