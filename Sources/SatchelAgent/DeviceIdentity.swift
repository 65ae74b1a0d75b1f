import Crypto
import Foundation
import SatchelBytes
import SatchelRights
import SatchelSystem

/// The device's identity in its data directory: the P-256 private key (made on first use and kept by a
/// ``DeviceKeyVault``: `device-key.pem`, mode 0600, on Linux; the keychain on Apple platforms) and, once registered, `device.json`: the device ID, the server's certificate for the key, the
/// server and its published signing keys. The registration is the device's trust anchor (every license is verified
/// against its keys), so `device.json` carries a seal: an HMAC-SHA256 of the registration under a key derived from
/// the device key. A file changed outside Satchel (another server, other keys) is not used: everything that needs
/// the registration fails with ``AgentError/registrationTampered(_:)`` until the device registers again.
package struct DeviceIdentity: Sendable {
    /// The device key (signs requests; HPKE-opens content keys).
    package let key: P256.Signing.PrivateKey
    /// The registration, if any.
    package var registration: Registration?
    /// Why the saved registration was not taken (changed outside Satchel), if it was not.
    package var tampered: String?

    /// What the license server answered at registration.
    package struct Registration: Codable, Sendable, Equatable {
        /// The device ID.
        package var deviceID: String
        /// The server's certificate for the device key (a signed token).
        package var certificate: String
        /// The license server's URL.
        package var server: String
        /// The server's signing keys, as `GET /licenses/keys` published them.
        package var serverKeys: PublicKeySet
        /// The device's name and external ID, as registered.
        package var name: String?
        /// The app's own ID of the device, when registered with one.
        package var externalID: String?
    }

    static let registrationFile = "device.json"

    /// `device.json`: the registration and its seal.
    struct SealedRegistration: Codable {
        var registration: Registration
        /// Base64url HMAC-SHA256 of the registration's canonical JSON (``seal(_:key:)``).
        var seal: String
    }

    /// The seal of `registration` under `key`: HMAC-SHA256 of its canonical JSON (sorted keys), keyed by HKDF-SHA256 of
    /// the device key.
    static func seal(_ registration: Registration, key: P256.Signing.PrivateKey) throws(AgentError) -> String {
        guard let canonical = try? JSONCoding.encoder().encode(registration) else { throw .storage("the registration cannot be encoded") }
        let sealing = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: key.rawRepresentation),
                                             info: Array("satchel device.json seal v1".utf8), outputByteCount: 32)
        return Base64URL.encode(Array(HMAC<SHA256>.authenticationCode(for: canonical, using: sealing)))
    }

    /// Loads the identity of `dataDirectory`, with the device key from `vault` (made on first use; by default
    /// the keychain on Apple platforms, `device-key.pem` elsewhere).
    package static func load(dataDirectory: String, vault: (any DeviceKeyVault)? = nil) throws(AgentError) -> DeviceIdentity {
        do {
            try PrivateFiles.folder(dataDirectory)
        } catch {
            throw .storage("cannot create the data directory \(dataDirectory) (owner only): \(error.description)")
        }
        let key = try (vault ?? FileKeyVault.platform(dataDirectory: dataDirectory)).deviceKey()
        let registrationPath = (dataDirectory as NSString).appendingPathComponent(registrationFile)
        guard let data = FileManager.default.contents(atPath: registrationPath) else { return DeviceIdentity(key: key, registration: nil) }
        guard let sealed = try? JSONCoding.decoder().decode(SealedRegistration.self, from: data) else {
            return DeviceIdentity(key: key, registration: nil, tampered: "\(registrationPath) is not a registration this device sealed")
        }
        guard ConstantTime.equals(Array(try seal(sealed.registration, key: key).utf8), Array(sealed.seal.utf8)) else {
            return DeviceIdentity(key: key, registration: nil, tampered: "\(registrationPath) no longer matches its seal")
        }
        return DeviceIdentity(key: key, registration: sealed.registration)
    }

    /// Saves the registration.
    package func save(_ registration: Registration, dataDirectory: String) throws(AgentError) {
        let sealed = SealedRegistration(registration: registration, seal: try Self.seal(registration, key: key))
        guard let data = try? JSONCoding.encoder(.pretty).encode(sealed) else { throw .storage("the registration cannot be encoded") }
        do {
            try AtomicFile.write(Array(data), to: (dataDirectory as NSString).appendingPathComponent(Self.registrationFile), mode: 0o600)
        } catch {
            throw .storage("cannot save the registration: \(error.description)")
        }
    }

    /// Deletes the saved registration (the device key stays).
    package func forget(dataDirectory: String) throws(AgentError) {
        let path = (dataDirectory as NSString).appendingPathComponent(Self.registrationFile)
        do {
            if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
        } catch {
            throw .storage("cannot remove the registration: \(error)")
        }
    }

    /// The key for HPKE (the same P-256 key).
    package var agreementKey: P256.KeyAgreement.PrivateKey {
        get throws(AgentError) {
            do { return try P256.KeyAgreement.PrivateKey(rawRepresentation: key.rawRepresentation) } catch { throw .storage("the device key is unusable") }
        }
    }

    /// The registration, or `notRegistered`.
    package func registered() throws(AgentError) -> Registration {
        if let tampered { throw .registrationTampered(tampered) }
        guard let registration else { throw .notRegistered }
        return registration
    }
}
