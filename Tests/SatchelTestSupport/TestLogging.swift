import Foundation
import Logging
import SatchelBytes
import SatchelSystem

/// Sends the test process's own log lines to `$SATCHEL_LOG_FILE` at `$SATCHEL_LOG_LEVEL` (what `scripts/test`
/// sets), so that `scripts/scan-logs` checks them with those of the `satchel` processes the tests start.
/// Loggers made before the first test media is asked for keep swift-log's default handler.
public enum TestLogging {
    private static let started = Locked(false)

    /// Bootstraps once, when the environment asks for a log file.
    public static func start() {
        let environment = ProcessInfo.processInfo.environment
        guard let path = environment["SATCHEL_LOG_FILE"], !path.isEmpty,
              let file = try? RotatingLogFile(path: path, maxBytes: 64 << 20, keep: 5) else { return }
        let level = (try? SatchelLogHandler.level(named: nil, environment: environment)) ?? .info
        started.withLock { done in
            guard !done else { return }
            done = true
            SatchelLogHandler.bootstrap(level: level, sinks: .init(standardError: false, file: file))
        }
    }
}

/// Collects formatted log lines (message, then each metadata `key=value`, sorted) for a test to read.
public struct CapturingHandler: LogHandler {
    /// The lines so far.
    public let lines: Locked<[String]>
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .trace

    /// A handler appending to `lines`.
    public init(lines: Locked<[String]>) {
        self.lines = lines
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let all = self.metadata.merging(event.metadata ?? [:]) { $1 }
        let text = "\(event.message) " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        lines.withLock { $0.append(text) }
    }
}
