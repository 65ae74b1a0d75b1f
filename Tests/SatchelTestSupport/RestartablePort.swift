import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A loopback port for a server that a test stops and starts again on the same address (a device agent remembers
/// its server's URL).
///
/// A port the system chose (`--port 0`) is in its ephemeral range, and once the first server stops, any client
/// connection of the test process can take it as its own source port: the restart then fails to bind. A port just
/// below that range is never handed to a client, and no other test's server asks for one (they all ask for port 0).
public enum RestartablePort {
    /// A port below the ephemeral range that nothing on 127.0.0.1 is bound to now. Another process can still take it
    /// before the server binds: a first start that fails should pick again.
    public static func pick() -> Int {
        let lowestEphemeral = ephemeralRange().lowerBound
        let range = max(1_024, lowestEphemeral - 8_000)..<lowestEphemeral
        for _ in 0..<64 {
            let port = Int.random(in: range)
            if isFree(port) { return port }
        }
        return Int.random(in: range)
    }

    /// The system's ephemeral port range, read from `/proc` (Linux's default where it cannot be read).
    static func ephemeralRange() -> ClosedRange<Int> {
        let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        let bounds = text.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        guard bounds.count == 2, bounds[0] > 1_024, bounds[0] <= bounds[1] else { return 32_768...60_999 }
        return bounds[0]...bounds[1]
    }

    /// Whether a socket can bind 127.0.0.1:`port` now (the probe is closed at once).
    static func isFree(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var reuse: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        return IPv4Address.with("127.0.0.1", port: port) { bind(fd, $0, $1) } == 0
    }
}
