import Foundation
import SatchelRights

/// Registering the device with a license server, on the agent's isolation.
enum AgentRegistration {
    /// Registers the device key for the token's user; answers the device ID.
    static func register(_ agent: isolated Agent, server: String, token: String, name: String?, externalID: String?) async throws(AgentError) -> String {
        let client = try LicenseServerClient(server: server, http: agent.transport.client)
        let keys = try Agent.decode(PublicKeySet.self, try await client.get("/licenses/keys"), what: "the server's key set")
        let answer = try Agent.decode(RegistrationAnswer.self,
                                      try await client.post("/devices", json: RegistrationRequest(publicKey: PublicKeyJWK(agent.device.key.publicKey),
                                                                                               name: name, externalID: externalID), token: token),
                                      what: "the registration")
        let certificate: DeviceCertificateClaims
        do {
            certificate = try SignedToken.verify(answer.certificate, as: DeviceCertificateClaims.self, key: keys.key(for: answer.certificate))
        } catch {
            throw .invalidAnswer("the device certificate does not verify: \(error.description)")
        }
        guard certificate.key.fingerprint == PublicKeyJWK(agent.device.key.publicKey).fingerprint, certificate.deviceID == answer.deviceID else {
            throw .invalidAnswer("the certificate is not for this device's key")
        }
        let registration = DeviceIdentity.Registration(deviceID: answer.deviceID, certificate: answer.certificate, server: server,
                                                       serverKeys: keys, name: name, externalID: externalID)
        try agent.device.adopt(registration, trusted: true)  // registered again: the new registration is trusted
        try? await AgentBackplane.enrolled(agent, downloadEnabled: answer.downloadEnabled, notice: answer.notice)  // a store to restore: the next sync says it
        _ = try? await agent.clock.fetchTime(server: server)
        agent.reporter.logger.info("device registered", metadata: ["device": .string(answer.deviceID)])
        return answer.deviceID
    }
}
