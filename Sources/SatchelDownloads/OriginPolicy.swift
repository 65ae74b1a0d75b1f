import Foundation
import SatchelSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which addresses an asset's files may be fetched from. A feed's items name URLs the device did not choose, so they
/// are fetched from public addresses only (unless the backplane's settings allow private origins): a feed cannot make
/// the device reach its own loopback, its network's routers or a cloud's metadata service.
public enum OriginPolicy: String, Codable, Sendable, Equatable {
    /// Any address (what the application itself asked for).
    case any
    /// Public addresses only: every name resolved, every redirect's target checked, before a byte is requested.
    case publicOnly = "public-only"
}

/// The address checks of ``OriginPolicy/publicOnly``: pure classification, and a name resolved on a thread of its own.
enum OriginAddress {
    /// Whether `address` (4 bytes: IPv4; 16: IPv6) is a public unicast address: not unspecified, loopback, private
    /// (RFC 1918, unique local), shared (100.64/10), link-local, benchmarking, reserved or multicast; an IPv4-mapped or
    /// NAT64 IPv6 address is judged by the IPv4 address it carries.
    static func isPublic(_ address: [UInt8]) -> Bool {
        switch address.count {
        case 4:
            let (a, b) = (address[0], address[1])
            switch a {
            case 0, 10, 127: return false
            case 100 where b & 0xC0 == 64: return false  // 100.64.0.0/10, carrier-grade NAT
            case 169 where b == 254: return false
            case 172 where b & 0xF0 == 16: return false
            case 192 where b == 168 || (b == 0 && address[2] == 0): return false
            case 198 where b & 0xFE == 18: return false  // 198.18.0.0/15
            default: return a < 224  // 224/4 multicast, 240/4 reserved and the broadcast address
            }
        case 16:
            if address.allSatisfy({ $0 == 0 }) || address == [UInt8](repeating: 0, count: 15) + [1] { return false }
            if address[0..<10].allSatisfy({ $0 == 0 }) && address[10] == 0xFF && address[11] == 0xFF { return isPublic(Array(address[12...])) }
            if address[0..<12] == [0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0] { return isPublic(Array(address[12...])) }
            if address[0] & 0xFE == 0xFC { return false }  // fc00::/7, unique local
            if address[0] == 0xFE && address[1] & 0x80 == 0x80 { return false }  // fe80::/10 link-local, fec0::/10 site-local
            if address[0] == 0xFF { return false }  // multicast
            return true
        default:
            return false
        }
    }

    /// Checks that `url`'s host is, or resolves only to, public addresses; the name is resolved on a thread of its own
    /// (`getaddrinfo` blocks). Answers nil when it does, else the first address that is not public (or why not).
    static func refusal(_ url: URL) async -> String? {
        guard let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme) else { return "not an http or https URL" }
        guard var host = url.host, !host.isEmpty else { return "no host" }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let name = host
        let addresses = await OwnThread.run { resolve(name) }
        guard !addresses.isEmpty else { return nil }  // unresolvable: the request fails with the network's own error
        return addresses.first { !isPublic($0) }.map(describe)
    }

    /// Every address `host` resolves to (a literal resolves to itself).
    private static func resolve(_ host: String) -> [[UInt8]] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(first) }
        var found: [[UInt8]] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor, let address = entry.pointee.ai_addr {
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                    withUnsafeBytes(of: v4.pointee.sin_addr) { found.append(Array($0)) }
                }
            case AF_INET6:
                address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                    withUnsafeBytes(of: v6.pointee.sin6_addr) { found.append(Array($0)) }
                }
            default: break
            }
            cursor = entry.pointee.ai_next
        }
        return found
    }

    private static func describe(_ address: [UInt8]) -> String {
        if address.count == 4 { return address.map(String.init).joined(separator: ".") }
        return stride(from: 0, to: address.count, by: 2).map { String(UInt16(address[$0]) << 8 | UInt16(address[$0 + 1]), radix: 16) }.joined(separator: ":")
    }
}
