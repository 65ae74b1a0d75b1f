import Crypto
import Foundation
import SatchelBytes

/// A content key sealed to one device's public key with HPKE (RFC 9180; DHKEM(P-256, HKDF-SHA256),
/// HKDF-SHA256, AES-256-GCM, base mode). The sealing context (license ID, device ID, key ID) is the
/// associated data, so a sealed key cannot be moved to another license or device.
public struct SealedKey: Codable, Sendable, Equatable {
    /// The key ID, hex.
    public var kid: String
    /// The HPKE encapsulated key, base64url.
    public var enc: String
    /// The sealed key, base64url.
    public var ct: String
    /// The content IV, hex (not secret: AES-128 HLS keys carry one).
    public var iv: String?

    static let suite = HPKE.Ciphersuite.P256_SHA256_AES_GCM_256
    static let info = Data("satchel license key v1".utf8)

    /// Seals `key` (with its ID `kid`) to `recipient` for the license `licenseID` of device `deviceID`.
    public static func seal(_ key: SecretBytes, kid: String, iv: [UInt8]? = nil, to recipient: P256.KeyAgreement.PublicKey,
                            licenseID: String, deviceID: String) throws(RightsError) -> SealedKey {
        do {
            var sender = try HPKE.Sender(recipientKey: recipient, ciphersuite: suite, info: info)
            let sealed = try sender.seal(key.bytes, authenticating: context(kid: kid, licenseID: licenseID, deviceID: deviceID))
            return SealedKey(kid: kid, enc: Base64URL.encode(Array(sender.encapsulatedKey)), ct: Base64URL.encode(Array(sealed)),
                             iv: iv.map(Hex.encode))
        } catch {
            throw .badKey("cannot seal to this key: \(error)")
        }
    }

    /// Opens the key with the device's private key; fails for any other device, license or key ID.
    public func open(with privateKey: P256.KeyAgreement.PrivateKey, licenseID: String, deviceID: String) throws(RightsError) -> SecretBytes {
        guard let enc = Base64URL.decode(enc), let ct = Base64URL.decode(ct) else { throw .cannotOpenKey("enc and ct must be base64url") }
        do {
            var recipient = try HPKE.Recipient(privateKey: privateKey, ciphersuite: Self.suite, info: Self.info, encapsulatedKey: Data(enc))
            let opened = try recipient.open(ct, authenticating: Self.context(kid: kid, licenseID: licenseID, deviceID: deviceID))
            return SecretBytes(Array(opened))
        } catch {
            throw .cannotOpenKey("the key \(kid) was not sealed to this device for this license")
        }
    }

    static func context(kid: String, licenseID: String, deviceID: String) -> Data {
        Data("\(licenseID)\n\(deviceID)\n\(kid)".utf8)
    }
}
