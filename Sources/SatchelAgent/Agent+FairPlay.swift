import Foundation
import SatchelBytes

/// A FairPlay key from the license server, as its key-request answer carries it.
public struct FairPlayAnswer: Sendable {
    /// The CKC (only the device that made the SPC opens it).
    public var ckc: [UInt8]
    /// The download's content ID when the key has dual expiry (what its Sync SPCs name), 32 hex digits.
    public var offlineContentID: String?
}

extension Agent {
    /// Sends a FairPlay SPC to the license server's FairPlay endpoint (`/fps/license`, the server this device
    /// registered with unless `server` says) with the entitlement `token`: the CKC that answers it. A refusal is the
    /// server's problem type, as for Satchel licenses.
    public func fairPlayKey(spc: [UInt8], token: String?, server: String? = nil) async throws(AgentError) -> FairPlayAnswer {
        try await FairPlayKeyExchange.key(self, spc: spc, token: token, server: server)
    }
}

/// The FairPlay key request of ``Agent/fairPlayKey(spc:token:server:)``.
enum FairPlayKeyExchange {
    static func key(_ agent: Agent, spc: [UInt8], token: String?, server: String?) async throws(AgentError) -> FairPlayAnswer {
        let registered = await agent.server
        guard let target = server ?? registered else { throw .notRegistered }
        let client = try LicenseServerClient(server: target, http: agent.transport.client)
        let body = try await client.post("/fps/license", json: FairPlayKeyRequestBody(spc: Data(spc).base64EncodedString()), token: token)
        guard let answer = try? JSONCoding.decoder().decode(FairPlayKeyAnswerBody.self, from: body),
              let ckc = Data(base64Encoded: answer.ckc), !ckc.isEmpty else {
            throw .invalidAnswer("the FairPlay answer is not a CKC")
        }
        if let contentID = answer.offlineContentID, (try? Hex.decode(contentID, count: 16)) == nil {
            throw .invalidAnswer("the FairPlay answer's offline content ID is not 32 hex digits")
        }
        return FairPlayAnswer(ckc: Array(ckc), offlineContentID: answer.offlineContentID)
    }
}

/// `{"spc": base64}`.
private struct FairPlayKeyRequestBody: Encodable {
    var spc: String
}

/// `{"ckc": base64, "offlineContentID": hex}`.
private struct FairPlayKeyAnswerBody: Decodable {
    var ckc: String
    var offlineContentID: String?
}
