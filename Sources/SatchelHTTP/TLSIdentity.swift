import Foundation
import NIOCore
import NIOSSL
import SatchelBytes

/// A server's TLS certificate chain and private key, read from two PEM files and read again on ``reload()``: every
/// handshake after a reload presents the new certificate (connections already open keep theirs). A reload that
/// fails (a file missing, unreadable, or a key that does not match) keeps the identity in force.
public final class TLSIdentity: Sendable {
    /// Why a certificate or key cannot be used (`tls-identity`).
    public struct Failure: ProblemConvertible {
        /// What went wrong, naming the file (never the key's contents).
        public let description: String
        /// `tls-identity`.
        public var code: String { "tls-identity" }
    }

    private struct Loaded {
        var chain: [NIOSSLCertificate]
        var key: NIOSSLPrivateKey
    }

    /// The certificate chain file (PEM: the server's certificate first).
    public let certificateFile: String
    /// The private key file (PEM).
    public let keyFile: String
    private let current: Locked<Loaded>

    /// Reads the chain and the key; throws ``Failure`` when either cannot be used.
    public init(certificateFile: String, keyFile: String) throws {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        current = Locked(try Self.load(certificateFile: certificateFile, keyFile: keyFile))
    }

    /// Reads both files again; on success new handshakes use them, on failure (thrown) the current ones stay.
    public func reload() throws {
        let loaded = try Self.load(certificateFile: certificateFile, keyFile: keyFile)
        current.withLock { $0 = loaded }
    }

    /// When the server certificate in force expires, and its serial number (hex), as the log says them.
    public var summary: (expires: Date, serial: String) {
        current.withLock { loaded in
            let certificate = loaded.chain[0]
            return (Date(timeIntervalSince1970: TimeInterval(certificate.notValidAfter)), Hex.encode(certificate.serialNumber))
        }
    }

    /// The cipher suites TLS 1.2 offers: forward secrecy (ECDHE) with an AEAD cipher only, no CBC, no SHA-1, no
    /// static RSA key exchange (TLS 1.3's own suites are all of that kind).
    public static let tls12CipherSuites: [NIOTLSCipher] = [
        .TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, .TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, .TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        .TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, .TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, .TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ]

    /// The server's TLS configuration: TLS 1.2 (with ``tls12CipherSuites`` only) and TLS 1.3, ALPN offering `h2`
    /// then `http/1.1`, and the certificate and key in force at each handshake.
    public func serverConfiguration() -> TLSConfiguration {
        let loaded = current.withLock { $0 }
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: loaded.chain.map { .certificate($0) }, privateKey: .privateKey(loaded.key))
        configuration.minimumTLSVersion = .tlsv12
        configuration.cipherSuiteValues = Self.tls12CipherSuites
        configuration.applicationProtocols = ["h2", "http/1.1"]
        configuration.sslContextCallback = { [current] _, promise in
            let loaded = current.withLock { $0 }
            var override = NIOSSLContextConfigurationOverride()
            override.certificateChain = loaded.chain.map { .certificate($0) }
            override.privateKey = .privateKey(loaded.key)
            promise.succeed(override)
        }
        return configuration
    }

    private static func load(certificateFile: String, keyFile: String) throws -> Loaded {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificateFile)
        } catch {
            throw Failure(description: "cannot read a PEM certificate chain from \(certificateFile)")
        }
        guard !chain.isEmpty else { throw Failure(description: "\(certificateFile) holds no certificate") }  // (summary reads chain[0])
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: keyFile, format: .pem)
        } catch {
            throw Failure(description: "cannot read a PEM private key from \(keyFile)")
        }
        // The key must be the certificate's: a context made from both fails otherwise.
        var probe = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        probe.minimumTLSVersion = .tlsv12
        do {
            _ = try NIOSSLContext(configuration: probe)
        } catch {
            throw Failure(description: "the private key in \(keyFile) is not the key of the certificate in \(certificateFile)")
        }
        return Loaded(chain: chain, key: key)
    }
}
