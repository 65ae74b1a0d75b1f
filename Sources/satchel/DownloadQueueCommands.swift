import ArgumentParser
import Foundation
import SatchelBytes
import SatchelDownloads

/// `satchel download move ID --to N`: an asset's place in the queue.
struct DownloadMove: SatchelAsyncCommand {
    static let configuration = CommandConfiguration(commandName: "move", abstract: "Move an asset to another place in the queue (0: first).")
    @OptionGroup var target: DownloadTarget
    @Option(help: "Its new place (0: first; past the end: last).") var to: Int

    func execute() async throws {
        guard to >= 0 else { throw CLIError("--to is 0 or more") }
        try await target.directory.withManager { try await $0.move(target.id, to: to) }
    }
}

/// `satchel download window ID …`: an asset's availability window changed after it was added.
struct DownloadWindow: SatchelAsyncCommand {
    static let configuration = CommandConfiguration(
        commandName: "window",
        abstract: "Change an asset's availability window, applied at once (past its new end, it expires now); `none` removes a value.")
    @OptionGroup var target: DownloadTarget
    @Option(help: "Publish date (ISO 8601, or none).") var publish: String?
    @Option(help: "Expiry date (ISO 8601, or none).") var expiry: String?
    @Option(name: .customLong("expiry-after-download"), help: "Seconds the asset stays after its download completes (or none).") var expiryAfterDownload: String?
    @Option(name: .customLong("expiry-after-play"), help: "Seconds the asset stays after its first play (or none).") var expiryAfterPlay: String?

    func execute() async throws {
        let window = try await target.directory.withManager { manager in
            var window = try await manager.asset(target.id).window
            if let publish { window.publishDate = try Self.date(publish, "--publish") }
            if let expiry { window.expiryDate = try Self.date(expiry, "--expiry") }
            if let expiryAfterDownload { window.expiryAfterDownload = try Self.seconds(expiryAfterDownload, "--expiry-after-download") }
            if let expiryAfterPlay { window.expiryAfterPlay = try Self.seconds(expiryAfterPlay, "--expiry-after-play") }
            try await manager.setWindow(target.id, window)
            return try await manager.asset(target.id).state
        }
        print("\(target.id): window changed; \(window.rawValue)")
    }

    static func date(_ text: String, _ option: String) throws -> Date? {
        if text == "none" { return nil }
        guard let date = ISODate.date(text) else { throw CLIError("\(option): expected an ISO 8601 date such as 2026-12-31 or 2026-12-31T12:00:00Z, or none") }
        return date
    }

    static func seconds(_ text: String, _ option: String) throws -> UInt32? {
        if text == "none" { return nil }
        guard let value = UInt32(text) else { throw CLIError("\(option): expected a number of seconds, or none") }
        return value
    }
}
