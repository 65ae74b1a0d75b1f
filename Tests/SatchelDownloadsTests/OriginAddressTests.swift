import Foundation
@testable import SatchelDownloads
import Testing

/// The addresses a feed's items may come from (issue 49 §12): public unicast only.
@Suite struct OriginAddressTests {
    @Test("loopback, private, shared, link-local, benchmarking, multicast and reserved IPv4 addresses are not public; ordinary ones are", arguments: [
        ("127.0.0.1", false), ("10.1.2.3", false), ("172.16.0.1", false), ("172.31.255.255", false), ("192.168.1.1", false),
        ("169.254.169.254", false), ("100.64.0.1", false), ("0.0.0.0", false), ("198.18.0.1", false), ("224.0.0.1", false),
        ("255.255.255.255", false), ("192.0.0.8", false),
        ("8.8.8.8", true), ("172.32.0.1", true), ("100.128.0.1", true), ("93.184.216.34", true), ("192.0.2.1", true),
    ])
    func ipv4(_ text: String, _ isPublic: Bool) {
        let bytes = text.split(separator: ".").map { UInt8($0)! }
        #expect(OriginAddress.isPublic(bytes) == isPublic, "\(text)")
    }

    @Test("IPv6: unspecified, loopback, unique local, link-local, site-local and multicast are not; a mapped or NAT64 address is judged by its IPv4 address")
    func ipv6() {
        func address(_ prefix: [UInt8], _ tail: [UInt8] = []) -> [UInt8] { prefix + [UInt8](repeating: 0, count: 16 - prefix.count - tail.count) + tail }
        #expect(!OriginAddress.isPublic(address([])))
        #expect(!OriginAddress.isPublic(address([], [1])))
        #expect(!OriginAddress.isPublic(address([0xFD, 0x12])))
        #expect(!OriginAddress.isPublic(address([0xFE, 0x80])))
        #expect(!OriginAddress.isPublic(address([0xFE, 0xC0])))
        #expect(!OriginAddress.isPublic(address([0xFF, 0x02], [1])))
        #expect(!OriginAddress.isPublic(address([], [0xFF, 0xFF, 127, 0, 0, 1])))
        #expect(OriginAddress.isPublic(address([], [0xFF, 0xFF, 8, 8, 8, 8])))
        #expect(!OriginAddress.isPublic(address([0x00, 0x64, 0xFF, 0x9B], [10, 0, 0, 1])))
        #expect(OriginAddress.isPublic(address([0x26, 0x06, 0x28, 0x00], [0x18, 0x46])))
        #expect(!OriginAddress.isPublic([1, 2, 3]), "neither 4 nor 16 bytes")
    }

    @Test("a URL naming localhost, a loopback literal or an IPv6 loopback literal is refused; a scheme other than HTTP is refused")
    func resolved() async {
        for url in ["http://localhost:1/x", "http://127.0.0.2/x", "http://[::1]:8080/x", "http://0x7f000001/x"] {
            #expect(await OriginAddress.refusal(URL(string: url)!) != nil, "\(url)")
        }
        #expect(await OriginAddress.refusal(URL(string: "file:///etc/passwd")!) != nil)
    }
}
