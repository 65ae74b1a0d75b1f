import Foundation

/// The line `satchel serve` prints on stdout once its port is bound (`listening on http://127.0.0.1:PORT`): tests
/// start servers with `--port 0` and read the port the system chose, so no two tests ever pick the same one (a server
/// restarted on its port starts on a ``RestartablePort`` instead).
enum ListeningLine {
    /// Reads the first line of `pipe` (blocking); the port it names, or nil when the server exited before it printed
    /// one (a bad argument, a port taken on a restart).
    static func port(from pipe: Pipe) -> Int? {
        var line = [UInt8]()
        while let byte = try? pipe.fileHandleForReading.read(upToCount: 1)?.first, byte != UInt8(ascii: "\n") { line.append(byte) }
        let text = String(decoding: line, as: UTF8.self)
        guard text.hasPrefix("listening on ") else { return nil }
        return URL(string: String(text.dropFirst("listening on ".count)))?.port
    }
}
