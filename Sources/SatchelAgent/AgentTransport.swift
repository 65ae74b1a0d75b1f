import AsyncHTTPClient
import Foundation
import NIOPosix
import NIOSSL
import SatchelBytes
import SatchelSystem

/// The HTTP client the agent's calls to its license server go through, trusting the system's certificate
/// authorities and the certificates given (a company's own authority, a test server's self-signed certificate). One
/// client per set of trusted certificates serves the whole process and is never shut down (as AsyncHTTPClient's
/// shared one): an agent dropped without `close()` leaves nothing behind.
struct AgentTransport: Sendable {
    let client: HTTPClient

    /// The clients made so far, by the PEM text of the certificates they trust besides the system's ("" for none).
    private static let clients = Locked<[String: HTTPClient]>([:])

    /// The certificates a data directory's agent trusts besides the system's, once given (PEM, mode 0600).
    static func trustFile(_ dataDirectory: String) -> String { dataDirectory + "/trusted-certificates.pem" }

    /// The client of the agent of `dataDirectory`: `adding` (PEM files), when given, become the certificates it
    /// trusts from now on (kept in the data directory); else those kept there earlier.
    static func open(dataDirectory: String, adding certificates: [String]) throws(AgentError) -> AgentTransport {
        let kept = trustFile(dataDirectory)
        var pem = ""
        for file in certificates {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8), let read = try? NIOSSLCertificate.fromPEMBytes(Array(text.utf8)),
                  !read.isEmpty else {
                throw .badRequest("cannot read a PEM certificate from \(file)")
            }
            pem += text.hasSuffix("\n") ? text : text + "\n"
        }
        if !certificates.isEmpty {
            do { try AtomicFile.write(Array(pem.utf8), to: kept, mode: PrivateFiles.fileMode) } catch { throw .storage("cannot keep the trusted certificates: \(error)") }
        } else if let data = FileManager.default.contents(atPath: kept) {
            pem = String(decoding: data, as: UTF8.self)
        }
        return AgentTransport(client: try client(trusting: pem))
    }

    private static func client(trusting pem: String) throws(AgentError) -> HTTPClient {
        if let made = clients.withLock({ $0[pem] }) { return made }
        var tls = TLSConfiguration.makeClientConfiguration()
        if !pem.isEmpty {
            guard let roots = try? NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)), !roots.isEmpty else {
                throw .storage("the trusted certificates kept in the data directory cannot be read")
            }
            tls.additionalTrustRoots = [.certificates(roots)]
        }
        // A connection that cannot be made (refused, a certificate not trusted) is tried again for 5 s, not until the
        // request's deadline: a server that is down or untrusted is said in seconds.
        let configuration = HTTPClient.Configuration(tlsConfiguration: tls, timeout: .init(connect: .seconds(5)))
        return clients.withLock { made in
            if let existing = made[pem] { return existing }
            let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
            made[pem] = client
            return client
        }
    }
}
