import ArgumentParser
import Dispatch
import Foundation
import Logging
import SatchelPlayback

/// `satchel play`: the playback proxy for a downloaded asset. The session URL is the first line on stdout;
/// events go to stderr; it runs until interrupted or, with `--exec`, until the command it started exits.
struct PlayCommand: SatchelAsyncCommand {
    static let configuration = CommandConfiguration(
        commandName: "play", abstract: "Serve a downloaded asset to a player through the loopback playback proxy (decrypted unless --passthrough).")

    @Argument(help: "The asset ID (as `download add` named it).") var asset: String
    @OptionGroup var directory: DownloadDirectoryOptions
    @Option(help: "The proxy's port on 127.0.0.1 (0: any free port).") var port = 0
    @Flag(help: "Keep the protection and the key tags (for players with DRM).") var passthrough = false
    @Option(help: "Run this command with {url} replaced by the session URL; exit with its status when it ends.") var exec: String?

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port is 0 to 65535") }
    }

    func execute() async throws {
        let status = try await directory.withEngine(readOnly: true) { manager, agent -> Int32 in
            let proxy = try PlaybackProxy(library: DownloadLibrary(manager: manager), rights: agent,
                                          configuration: .init(port: port, mode: passthrough ? .passthrough : .decrypt),
                                          logger: Logger(label: "satchel.playback"))
            let events = Task {
                for await event in proxy.events { FileHandle.standardError.write(Data("satchel: event: \(event.line)\n".utf8)) }
            }
            defer { events.cancel() }
            let url: String
            do {
                url = try await proxy.open(asset: asset)
            } catch {
                await proxy.stop()
                throw error
            }
            FileHandle.standardOutput.write(Data((url + "\n").utf8))  // unbuffered: a script reads it at once
            let status: Int32
            if let exec {
                status = try await Self.run(exec.replacingOccurrences(of: "{url}", with: "'\(url)'"))
            } else {
                await Self.interrupted()
                status = 0
            }
            await proxy.stop()
            await events.value
            return status
        }
        if status != 0 { throw ExitCode(status) }
    }

    /// Runs `command` with /bin/sh; answers its exit status.
    static func run(_ command: String) async throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        return try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try process.run() } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: CLIError("cannot run --exec: \(error.localizedDescription)"))
            }
        }
    }

    /// Returns at SIGINT or SIGTERM.
    static func interrupted() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let queue = DispatchQueue(label: "satchel.play.signals")
            let once = NSLock()
            var resumed = false
            var sources: [any DispatchSourceSignal] = []
            for number in [SIGINT, SIGTERM] {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
                source.setEventHandler {
                    once.lock()
                    defer { once.unlock() }
                    guard !resumed else { return }
                    resumed = true
                    sources.forEach { $0.cancel() }
                    continuation.resume()
                }
                sources.append(source)
                source.resume()
            }
        }
    }
}
