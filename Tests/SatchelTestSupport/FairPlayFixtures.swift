import Foundation

/// Apple's development FairPlay credentials and vectors, read in place from
/// `../shared/conformance/fairplay/` (never copied into the repository).
public enum FairPlayFixtures {
    /// The conformance folder.
    public static let root: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }  // Tests/SatchelTestSupport/FairPlayFixtures.swift → repository's parent
        return url.appendingPathComponent("shared/conformance/fairplay")
    }()

    /// The development package's fixed DASk.
    public static let developmentDASk = "d87ce7a26081de2e8eb8acef3a6dc179"

    /// A file of the conformance folder.
    public static func bytes(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: root.appendingPathComponent(path)))
    }

    /// The development Application Certificate (DER).
    public static func certificate() throws -> [UInt8] { try bytes("credentials/dev_certificate.der") }

    /// Its private key (PEM).
    public static func privateKeyPEM() throws -> [UInt8] { try bytes("credentials/dev_private_key.pem") }
}
