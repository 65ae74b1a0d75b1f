import Foundation
import Logging
import SatchelBytes

/// Satchel's swift-log handler: one level chosen at run time, records redacted (`LogRedaction`), written
/// to standard error and/or a ``RotatingLogFile`` by the ``LogWriter``'s thread, and published to ``LogHub`` for subscribers.
package struct SatchelLogHandler: LogHandler {
    /// Where records go.
    package struct Sinks: Sendable {
        /// Write lines to standard error.
        package var standardError: Bool
        /// Append lines to this file.
        package var file: RotatingLogFile?
        /// Publish records here.
        package var hub: LogHub

        /// Sinks.
        package init(standardError: Bool = true, file: RotatingLogFile? = nil, hub: LogHub = .shared) {
            self.standardError = standardError
            self.file = file
            self.hub = hub
        }
    }

    private let label: String
    private let sinks: Sinks
    /// The level below which nothing is recorded.
    package var logLevel: Logger.Level
    /// Metadata attached to every record of this logger.
    package var metadata: Logger.Metadata = [:]
    /// Metadata provider (task-local metadata).
    package var metadataProvider: Logger.MetadataProvider?

    /// A handler for `label`.
    package init(label: String, level: Logger.Level, sinks: Sinks) {
        self.label = label
        self.logLevel = level
        self.sinks = sinks
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        let record = LogRecord(date: Date(), level: event.level, label: label, message: LogRedaction.redact(event.message.description),
                               metadata: merged.mapValues { LogRedaction.redact($0.description) })
        let text = record.line
        // Written by the log's own thread: a log call on an event loop never waits for a write().
        if sinks.standardError || sinks.file != nil { LogWriter.shared.enqueue(.init(line: text, standardError: sinks.standardError, file: sinks.file)) }
        if sinks.hub.hasSubscribers { sinks.hub.publish(record) }
    }

    /// Makes every logger of the process a ``SatchelLogHandler`` at `level` writing to `sinks` (call once,
    /// at start; swift-log allows one bootstrap per process).
    package static func bootstrap(level: Logger.Level, sinks: Sinks) {
        LoggingSystem.bootstrap { label in SatchelLogHandler(label: label, level: level, sinks: sinks) }
        atexit { LogWriter.shared.flush() }  // a command's last lines are written before it exits
    }

    /// The level asked for: `name` (a command-line option) if given, else `SATCHEL_LOG_LEVEL`, else `fallback`.
    /// An unknown name is an error that lists the valid ones.
    package static func level(named name: String?, environment: [String: String] = ProcessInfo.processInfo.environment,
                             fallback: Logger.Level = .info) throws(LogSettingError) -> Logger.Level {
        guard let text = name ?? environment["SATCHEL_LOG_LEVEL"], !text.isEmpty else { return fallback }
        guard let level = Logger.Level(name: text) else { throw LogSettingError(value: String(text.prefix(32))) }
        return level
    }
}

/// A log level that is not one of swift-log's.
package struct LogSettingError: ProblemConvertible, Equatable {
    /// The value given.
    package var value: String

    /// The error for `value`.
    package init(value: String) {
        self.value = value
    }
    package var code: String { "invalid-log-level" }
    package var httpStatus: Int { 400 }
    package var description: String { "unknown log level \"\(value)\" (trace, debug, info, notice, warning, error, critical)" }
}
