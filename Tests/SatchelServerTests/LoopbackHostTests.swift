import Foundation
import Hummingbird
import HummingbirdTesting
import SatchelHTTP
import SatchelServer
import SatchelTestSupport
import Testing

/// DNS rebinding: a page of another site makes its own name resolve to 127.0.0.1 and has the browser ask the demo's
/// token route; the request carries that site's name as `Host`, and gets nothing.
@Suite("Loopback Host check")
struct LoopbackHostTests {
    @Test("the demo's token route answers only Host 127.0.0.1, localhost or [::1] (with or without a port); another Host gets 403 problem+json and no token")
    func demoTokens() async throws {
        let (builder, database, _) = try await OpenAPIDocumentTests.everything()
        defer { Task { await database.shutdown() } }
        try await builder.build().test(.live) { client in
            let port = try #require(client.port)
            try await TestMedia.offloaded {
                func get(_ host: String) throws -> String {
                    let connection = try RawConnection(port: port)
                    connection.send("GET /demo/token/movie HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n")
                    return connection.readResponse()
                }
                for host in ["attacker.example", "attacker.example:\(port)", "127.0.0.1.attacker.example", "localhost.attacker.example:\(port)"] {
                    let answer = try get(host)
                    #expect(answer.hasPrefix("HTTP/1.1 403") && answer.contains("host-not-allowed") && !answer.contains("\"token\""), "\(host): \(answer.prefix(160))")
                }
                for host in ["127.0.0.1:\(port)", "localhost:\(port)", "[::1]:\(port)", "localhost"] {
                    let answer = try get(host)
                    #expect(answer.hasPrefix("HTTP/1.1 200") && answer.contains("\"token\""), "\(host): \(answer.prefix(160))")
                }
            }
        }
    }

    @Test("the loopback names, as the check reads them")
    func names() {
        for host in ["127.0.0.1", "127.0.0.1:8080", "localhost", "LocalHost:1", "[::1]", "[::1]:65535"] {
            #expect(LoopbackHostMiddleware<BasicRequestContext>.isLoopback(host), "\(host)")
        }
        for host in [nil, "", "127.0.0.2", "127.0.0.1:", "127.0.0.1:123456", "127.0.0.1:8o", "localhost.", "[::1]x", "evil.com", "127.0.0.1@evil"] {
            #expect(!LoopbackHostMiddleware<BasicRequestContext>.isLoopback(host), "\(host ?? "nil")")
        }
    }
}
