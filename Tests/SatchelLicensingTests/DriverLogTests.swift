import Foundation
import Logging
import SQLKit
import SatchelBytes
import SatchelLicensing
import Testing

/// A store's database drivers log at info at the finest, whatever the process's level: at debug they logged every
/// statement's parameters, and at trace PostgreSQL's driver wrote out every protocol message on the connection's event
/// loop, rows and parameters hex-dumped (a test run at trace found a loop held 219 ms by it): the store's contents.
@Suite("Database drivers' log")
struct DriverLogTests {
    /// Every line logged, with its level.
    struct Capture: LogHandler {
        let lines: Locked<[(Logger.Level, String)]>
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let fields = (event.metadata ?? [:]).map { "\($0.key)=\($0.value)" }.sorted().joined(separator: " ")
            lines.withLock { $0.append((event.level, "\(event.message) \(fields)")) }
        }
    }

    @Test("a store opened with a logger at trace: its drivers log nothing below info, so no parameter of a statement and none of PostgreSQL's protocol messages reach the log",
          .enabled(if: ProcessInfo.processInfo.environment["SATCHEL_TEST_DATABASE_URL"] != nil))
    func noProtocolTrace() async throws {
        let lines = Locked<[(Logger.Level, String)]>([])
        var logger = Logger(label: "satchel.licensing") { _ in Capture(lines: lines) }
        logger.logLevel = .trace
        try await LicensingDatabase(dataDirectory: NSTemporaryDirectory(), url: ProcessInfo.processInfo.environment["SATCHEL_TEST_DATABASE_URL"],
                                    logger: logger).using { database in
            let row = try await database.sql().raw("SELECT \(bind: "a-value-of-the-store") AS v").first()
            #expect(try row?.decode(column: "v", as: String.self) == "a-value-of-the-store")
        }
        let logged = lines.current
        #expect(!logged.contains { $0.0 < .info }, "\(logged.filter { $0.0 < .info }.prefix(3).map(\.1))")
        // The parameter as a debug line gives it, and its bytes as a trace line's hex dump shows them.
        let dumped = Hex.encode(Array("a-value-of".utf8))
        #expect(!logged.contains { $0.1.contains("a-value-of") || $0.1.replacingOccurrences(of: " ", with: "").contains(dumped) })
    }
}
