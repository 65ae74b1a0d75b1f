import Crypto
import Foundation
import SatchelBytes

/// Secrets kept at rest in a data directory (the entitlement tokens and header values of queued downloads),
/// sealed with AES-GCM under a key derived from the device key: a copy of the database opens only on this device.
public struct DeviceSecretBox: SecretSealing {
    private let seal: StateSeal

    /// The box of the device whose key `vault` keeps (made on first use), or the platform's vault for `dataDirectory`.
    public init(dataDirectory: String, vault: (any DeviceKeyVault)? = nil) throws(AgentError) {
        let identity = try DeviceIdentity.load(dataDirectory: dataDirectory, vault: vault)
        seal = StateSeal(deviceKey: identity.key, purpose: "download-secrets")
    }

    public func seal(_ text: String) throws -> String {
        try seal.seal(text)
    }

    public func open(_ sealed: String) throws -> String {
        guard let text = seal.open(String.self, sealed) else { throw AgentError.storeTampered("a sealed secret does not open") }
        return text
    }
}
