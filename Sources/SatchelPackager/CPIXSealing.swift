import Crypto
import CryptoExtras
import Foundation
import SatchelBytes
import SatchelFairPlay
import SatchelProtection

/// The recipient of an encrypted CPIX document: its X.509 certificate (the `DeliveryKey`) and the RSA public key in
/// it (2048 bits or more), which wraps the document key and the MAC key with RSA-OAEP (SHA-1, MGF1-SHA-1, as
/// `rsa-oaep-mgf1p` names it).
public struct CPIXRecipient: Sendable {
    /// The certificate, DER.
    public let certificate: [UInt8]
    private let publicKey: [UInt8]  // SubjectPublicKeyInfo, DER

    /// The recipient of `certificate` (PEM or DER).
    public init(certificate: [UInt8]) throws(PackagerError) {
        do {
            let der = try FairPlayCredential.certificateDER(certificate)
            let spki = try CertificateReader.subjectPublicKeyInfo(der)
            guard (try? _RSA.Encryption.PublicKey(derRepresentation: spki)) != nil else {
                throw PackagerError.invalidOptions("the recipient's certificate has no RSA key of 2048 bits or more")
            }
            self.certificate = der
            self.publicKey = spki
        } catch let error as PackagerError {
            throw error
        } catch {
            throw .invalidOptions("the recipient's certificate cannot be read: \(error)")
        }
    }

    func wrap(_ secret: [UInt8]) throws(PackagerError) -> [UInt8] {
        do {
            return Array(try _RSA.Encryption.PublicKey(derRepresentation: publicKey).encrypt(secret, padding: .PKCS1_OAEP))
        } catch {
            throw .invalidOptions("RSA-OAEP encryption failed")
        }
    }
}

/// The private key that opens CPIX documents encrypted for its certificate (PEM, PKCS#1 or PKCS#8). Secret.
public struct CPIXPrivateKey: Sendable {
    private let der: SecretBytes

    /// The key in `pem`.
    public init(pem: String) throws(PackagerError) {
        guard let key = try? _RSA.Encryption.PrivateKey(pemRepresentation: pem) else {
            throw .invalidOptions("the private key is not an RSA key of 2048 bits or more in PEM")
        }
        der = SecretBytes(Array(key.derRepresentation))
    }

    func unwrap(_ wrapped: [UInt8]) throws(PackagerError) -> [UInt8] {
        guard let key = try? _RSA.Encryption.PrivateKey(derRepresentation: der.bytes), let plain = try? key.decrypt(wrapped, padding: .PKCS1_OAEP) else {
            throw .cpix("the document key does not open with this private key (another recipient's document?)")
        }
        return Array(plain)
    }
}

/// A document's secrets: the AES-256 document key that encrypts each content key (CBC, a random IV before the
/// ciphertext, PKCS#7 padding) and the HMAC-SHA512 key of each encrypted value's MAC.
struct CPIXSealing {
    let documentKey: [UInt8]
    let macKey: [UInt8]

    static func random() -> CPIXSealing { CPIXSealing(documentKey: SecureRandom.bytes(32), macKey: SecureRandom.bytes(64)) }

    /// `secret` encrypted (IV ‖ ciphertext) and that value's MAC.
    func seal(_ secret: SecretBytes) throws(PackagerError) -> (value: [UInt8], mac: [UInt8]) {
        let iv = SecureRandom.bytes(16)
        let cipher: Data
        do { cipher = try BlockCipher.cbc(secret.bytes, key: SymmetricKey(data: documentKey), iv: iv, encrypt: true, padding: true) } catch {
            throw .invalidOptions("AES-256-CBC encryption failed")
        }
        let value = iv + Array(cipher)
        return (value, Array(HMAC<SHA512>.authenticationCode(for: value, using: SymmetricKey(data: macKey))))
    }

    /// Opens a sealed value after checking its MAC (in constant time).
    func open(_ value: [UInt8], mac: [UInt8]?) throws(PackagerError) -> SecretBytes {
        guard let mac, HMAC<SHA512>.isValidAuthenticationCode(mac, authenticating: value, using: SymmetricKey(data: macKey)) else {
            throw .cpix("a content key's MAC does not match: the document was changed or damaged")
        }
        guard value.count >= 32, let plain = try? BlockCipher.cbc(value[16...], key: SymmetricKey(data: documentKey), iv: Array(value[..<16]),
                                                                  encrypt: false, padding: true) else {
            throw .cpix("a content key does not decrypt")
        }
        return SecretBytes(Array(plain))
    }
}
