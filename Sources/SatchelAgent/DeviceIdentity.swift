import Crypto
import Foundation
import SatchelBytes
import SatchelRights
import SatchelSystem

/// The device's identity in its data directory: the P-256 private key (made on first use and kept by a
/// ``DeviceKeyVault``: `device-key.pem`, mode 0600, on Linux; the keychain on Apple platforms) and, once registered, `device.json`: the device ID, the server's certificate for the key, the
/// server and its published signing keys.
public struct DeviceIdentity: Sendable {
    /// The device key (signs requests; HPKE-opens content keys).
    public let key: P256.Signing.PrivateKey
    /// The registration, if any.
    public var registration: Registration?

    /// What the license server answered at registration.
    public struct Registration: Codable, Sendable, Equatable {
        /// The device ID.
        public var deviceID: String
        /// The server's certificate for the device key (a signed token).
        public var certificate: String
        /// The license server's URL.
        public var server: String
        /// The server's signing keys, as `GET /licenses/keys` published them.
        public var serverKeys: PublicKeySet
        /// The device's name and external ID, as registered.
        public var name: String?
        /// The app's own ID of the device, when registered with one.
        public var externalID: String?
    }

    static let registrationFile = "device.json"

    /// Loads the identity of `dataDirectory`, with the device key from `vault` (made on first use; by default
    /// the keychain on Apple platforms, `device-key.pem` elsewhere).
    public static func load(dataDirectory: String, vault: (any DeviceKeyVault)? = nil) throws(AgentError) -> DeviceIdentity {
        do {
            try PrivateFiles.folder(dataDirectory)
        } catch {
            throw .storage("cannot create the data directory \(dataDirectory) (owner only): \(error.description)")
        }
        let key = try (vault ?? FileKeyVault.platform(dataDirectory: dataDirectory)).deviceKey()
        let registrationPath = (dataDirectory as NSString).appendingPathComponent(registrationFile)
        var registration: Registration?
        if let data = FileManager.default.contents(atPath: registrationPath) {
            guard let decoded = try? JSONCoding.decoder().decode(Registration.self, from: data) else { throw .storage("\(registrationPath) cannot be read") }
            registration = decoded
        }
        return DeviceIdentity(key: key, registration: registration)
    }

    /// Saves the registration.
    public func save(_ registration: Registration, dataDirectory: String) throws(AgentError) {
        guard let data = try? JSONCoding.encoder(.pretty).encode(registration) else { throw .storage("the registration cannot be encoded") }
        do {
            try AtomicFile.write(Array(data), to: (dataDirectory as NSString).appendingPathComponent(Self.registrationFile), mode: 0o600)
        } catch {
            throw .storage("cannot save the registration: \(error.description)")
        }
    }

    /// Deletes the saved registration (the device key stays).
    public func forget(dataDirectory: String) throws(AgentError) {
        let path = (dataDirectory as NSString).appendingPathComponent(Self.registrationFile)
        do {
            if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
        } catch {
            throw .storage("cannot remove the registration: \(error)")
        }
    }

    /// The key for HPKE (the same P-256 key).
    public var agreementKey: P256.KeyAgreement.PrivateKey {
        get throws(AgentError) {
            do { return try P256.KeyAgreement.PrivateKey(rawRepresentation: key.rawRepresentation) } catch { throw .storage("the device key is unusable") }
        }
    }

    /// The registration, or `notRegistered`.
    public func registered() throws(AgentError) -> Registration {
        guard let registration else { throw .notRegistered }
        return registration
    }
}
