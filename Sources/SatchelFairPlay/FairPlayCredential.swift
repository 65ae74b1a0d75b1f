import CryptoExtras
import Foundation
import SatchelBytes

/// One set of FairPlay credentials: the Application Certificate, its RSA private key and
/// the D function (development DASk or production ASk).
///
/// A KSM may hold several; the SPC's certificate hash selects one.
public struct FairPlayCredential: Sendable {
    /// SHA-1 of the DER Application Certificate, as carried in SPC bytes 152-171.
    public let certificateHash: [UInt8]
    /// The DER Application Certificate, served to clients at the certificate URL.
    public let certificate: [UInt8]?
    private let privateKey: RSAKeyBox
    let dFunction: any DFunction

    /// Builds a credential from the certificate (DER or PEM), the private key (PEM or DER)
    /// and a D function.
    public init(certificate: [UInt8], privateKey: [UInt8], dFunction: any DFunction) throws(FairPlayError) {
        let der = try Self.certificateDER(certificate)
        _ = try CertificateReader.subjectPublicKeyInfo(der)
        self.certificate = der
        self.certificateHash = FairPlayCrypto.sha1(der)
        self.privateKey = RSAKeyBox(key: try Self.loadPrivateKey(privateKey))
        self.dFunction = dFunction
    }

    /// A credential without its certificate (inspection only): every SPC is tried with this key.
    public init(privateKey: [UInt8], dFunction: any DFunction) throws(FairPlayError) {
        self.certificate = nil
        self.certificateHash = []
        self.privateKey = RSAKeyBox(key: try Self.loadPrivateKey(privateKey))
        self.dFunction = dFunction
    }

    /// True when this credential matches an SPC's certificate hash (always, for a credential without certificate).
    func matches(certificateHash hash: [UInt8]) -> Bool {
        certificate == nil || ConstantTime.equals(certificateHash, hash)
    }

    /// RSA-OAEP (SHA-1) decryption of the 128-byte SPC key field.
    func decryptSPCKey(_ encrypted: [UInt8]) throws(FairPlayError) -> [UInt8] {
        let plain: Data
        do {
            plain = try privateKey.key.decrypt(Data(encrypted), padding: .PKCS1_OAEP)
        } catch {
            throw .spcKeyDecryptionFailed
        }
        guard plain.count == 16 else { throw .invalidSPCKeyLength(plain.count) }
        return Array(plain)
    }

    static func loadPrivateKey(_ bytes: [UInt8]) throws(FairPlayError) -> _RSA.Encryption.PrivateKey {
        let key: _RSA.Encryption.PrivateKey
        do {
            if let text = String(bytes: bytes, encoding: .utf8), text.contains("-----BEGIN") {
                key = try _RSA.Encryption.PrivateKey(unsafePEMRepresentation: text)
            } else {
                key = try _RSA.Encryption.PrivateKey(unsafeDERRepresentation: bytes)
            }
        } catch {
            throw .invalidPrivateKey("not an RSA private key in PEM or DER form")
        }
        guard key.keySizeInBits == 1024 else { throw .unsupportedRSAKeySize(bits: key.keySizeInBits) }
        return key
    }

    /// The DER bytes of a certificate given as DER or PEM.
    package static func certificateDER(_ bytes: [UInt8]) throws(FairPlayError) -> [UInt8] {
        guard let text = String(bytes: bytes, encoding: .utf8), text.contains("-----BEGIN CERTIFICATE-----") else {
            return bytes
        }
        let body = text.components(separatedBy: "\n")
            .filter { !$0.hasPrefix("-----") }
            .joined()
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard let decoded = Data(base64Encoded: body, options: .ignoreUnknownCharacters) else {
            throw .invalidCertificate("PEM body is not base64")
        }
        return Array(decoded)
    }
}

/// Holds an RSA private key across concurrency domains.
///
/// `_RSA.Encryption.PrivateKey` is an immutable handle to a BoringSSL `RSA` object, whose
/// private-key operations are safe to run concurrently (BoringSSL locks its blinding state),
/// but swift-crypto 4.5 does not mark the type `Sendable`.
struct RSAKeyBox: @unchecked Sendable {
    let key: _RSA.Encryption.PrivateKey
}
