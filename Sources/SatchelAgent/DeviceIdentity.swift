import Crypto
import Foundation
import SatchelRights
import SatchelSystem

/// The device's identity in its data directory: the P-256 private key (`device-key.pem`, mode 0600, made on
/// first use) and, once registered, `device.json`: the device ID, the server's certificate for the key, the
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
        public var externalID: String?
    }

    static let keyFile = "device-key.pem"
    static let registrationFile = "device.json"

    /// Loads the identity of `dataDirectory`, making the key on first use.
    public static func load(dataDirectory: String) throws(AgentError) -> DeviceIdentity {
        let keyPath = (dataDirectory as NSString).appendingPathComponent(keyFile)
        let key: P256.Signing.PrivateKey
        do {
            try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        } catch {
            throw .storage("cannot create the data directory \(dataDirectory)")
        }
        if let pem = try? String(contentsOfFile: keyPath, encoding: .utf8) {
            guard let loaded = try? P256.Signing.PrivateKey(pemRepresentation: pem) else { throw .storage("\(keyPath) is not a P-256 private key") }
            key = loaded
        } else {
            let made = P256.Signing.PrivateKey()
            do throws(SystemError) {
                try AtomicFile.write(Array(made.pemRepresentation.utf8), to: keyPath, mode: 0o600, replace: false)
                key = made
            } catch where error.errno == EEXIST {
                return try load(dataDirectory: dataDirectory)  // another process made it first
            } catch {
                throw .storage("cannot write the device key: \(error.description)")
            }
        }
        let registrationPath = (dataDirectory as NSString).appendingPathComponent(registrationFile)
        var registration: Registration?
        if let data = FileManager.default.contents(atPath: registrationPath) {
            guard let decoded = try? JSONDecoder().decode(Registration.self, from: data) else { throw .storage("\(registrationPath) cannot be read") }
            registration = decoded
        }
        return DeviceIdentity(key: key, registration: registration)
    }

    /// Saves the registration.
    public func save(_ registration: Registration, dataDirectory: String) throws(AgentError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(registration) else { throw .storage("the registration cannot be encoded") }
        do {
            try AtomicFile.write(Array(data), to: (dataDirectory as NSString).appendingPathComponent(Self.registrationFile), mode: 0o600)
        } catch {
            throw .storage("cannot save the registration: \(error.description)")
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
