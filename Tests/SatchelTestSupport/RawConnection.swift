import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A plain TCP connection to a loopback port with blocking reads under a timeout, for tests that must
/// send exactly the bytes a misbehaving client sends (half a request head, a broken chunk, nothing at all).
/// Call it from ``TestMedia/offloaded(_:)`` when the server runs in the same process.
public final class RawConnection: @unchecked Sendable {
    private let fd: Int32

    /// Connects to 127.0.0.1:`port` from the loopback address `source` (another client, as the server sees it);
    /// reads give up after `timeout` seconds.
    public init(port: Int, timeout: Double = 5, source: String = "127.0.0.1") throws {
        // The descriptor is stored only once connected: a throwing init of a fully initialised class runs
        // deinit, and a descriptor closed both here and there could be another one by then (a server's socket).
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        let bound = IPv4Address.with(source) { bind(fd, $0, $1) }
        guard bound == 0 else {
            close(fd)
            throw POSIXError(.EADDRNOTAVAIL)
        }
        let connected = IPv4Address.with("127.0.0.1", port: port) { connect(fd, $0, $1) }
        guard connected == 0 else {
            close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
        self.fd = fd
        var limit = timeval()
        limit.tv_sec = .init(Int(timeout))
        limit.tv_usec = .init(Int((timeout - Double(Int(timeout))) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// Sends `text` as is.
    public func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { systemSend(fd, $0.baseAddress, $0.count) }
    }

    /// Reads until the peer closes, `count` bytes arrived, or the timeout passes. `closed` is true when
    /// the peer closed the connection (a read returned end of file).
    public func read(upTo count: Int = 65536) -> (text: String, closed: Bool) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while received.count < count {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return (String(decoding: received, as: UTF8.self), true) }
            if n < 0, errno == EINTR { continue }  // a signal (a child process ending) is not the end of the connection
            if n < 0 { return (String(decoding: received, as: UTF8.self), errno == ECONNRESET) }
            received += buffer[..<n]
        }
        return (String(decoding: received, as: UTF8.self), false)
    }

    /// Reads one HTTP response with a Content-Length body (or until close).
    public func readResponse() -> String {
        var text = ""
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            if let end = text.range(of: "\r\n\r\n") {
                let head = text[..<end.lowerBound].lowercased()
                let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                if text.utf8.count - text.utf8.distance(from: text.utf8.startIndex, to: end.upperBound.samePosition(in: text.utf8) ?? text.utf8.endIndex) >= length {
                    return text
                }
            }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return text }
            text += String(decoding: buffer[..<n], as: UTF8.self)
        }
    }
}

#if canImport(Glibc)
private func systemSend(_ fd: Int32, _ pointer: UnsafeRawPointer?, _ count: Int) -> Int { Glibc.send(fd, pointer, count, Int32(MSG_NOSIGNAL)) }
#elseif canImport(Darwin)
private func systemSend(_ fd: Int32, _ pointer: UnsafeRawPointer?, _ count: Int) -> Int { Darwin.send(fd, pointer, count, 0) }
#endif
