import Foundation
import Logging
import SatchelRights

/// The registered server's signing keys as the device learns them: a key it meets for the first time is trusted only
/// when the server's introductions (`GET /licenses/keys/rotations`) lead to it from a key the device already trusts;
/// the registration is then saved sealed with the key added. An edited `device.json` is refused by its seal, so this
/// is the one way a key is added. Runs on the agent's isolation.
struct AgentServerKeys {
    let device: AgentDevice
    let transport: AgentTransport
    let logger: Logger

    /// Makes sure the key `kid` is trusted when the server introduced it; a key no introduction leads to stays unknown
    /// (whatever it signed then fails to verify, as before).
    nonisolated(nonsending) func learn(kid: String?) async throws(AgentError) {
        var registration = try device.registered()
        guard let kid, !registration.serverKeys.keys.contains(where: { $0.kid == kid }) else { return }
        let client = try LicenseServerClient(server: registration.server, timeout: .seconds(10), http: transport.client)
        let answer = try Agent.decode(KeyRotationsAnswer.self, try await client.get("/licenses/keys/rotations"), what: "the server's key introductions")
        let extended = registration.serverKeys.extended(by: answer.rotations)
        guard extended.keys.contains(where: { $0.kid == kid }) else { return }
        registration.serverKeys = extended
        try device.adopt(registration)
        logger.notice("the server's new signing key is trusted: a key this device trusts introduced it", metadata: ["kid": .string(kid)])
    }
}
