import ArgumentParser
import Foundation
import Logging
import SatchelBytes
import SatchelSystem

/// `--log-level` and `--log-file`: what the server and the download engine log, and where.
struct LoggingOptions: ParsableArguments {
    @Option(name: .customLong("log-level"),
            help: "trace, debug, info, notice, warning, error or critical (default: $SATCHEL_LOG_LEVEL, else info for serve, critical for download).")
    var level: String?
    @Option(name: .customLong("log-file"), help: "Also append log lines to this file (mode 0600), rotated at 10 MB keeping 5 (default: $SATCHEL_LOG_FILE).")
    var file: String?

    /// Sets up logging for the process once: the level and the sinks. With a log file, lines go to the file
    /// only (standard error stays the command's own).
    func bootstrap(fallback: Logger.Level) throws {
        let environment = ProcessInfo.processInfo.environment
        let asked = level ?? environment["SATCHEL_LOG_LEVEL"]
        let level = try SatchelLogHandler.level(named: asked, fallback: fallback)
        let path = file ?? environment["SATCHEL_LOG_FILE"].flatMap { $0.isEmpty ? nil : $0 }
        var sinks = SatchelLogHandler.Sinks()
        if let path {
            do { sinks.file = try RotatingLogFile(path: path) } catch { throw CLIError("--log-file: cannot open \(path): \(String(cString: strerror(error.errno)))") }
            sinks.standardError = false  // the file has every line; standard error stays the command's own
        }
        Self.once.withLock { done in
            guard !done else { return }
            done = true
            SatchelLogHandler.bootstrap(level: level, sinks: sinks)
        }
    }

    private static let once = Locked(false)
}
