import Foundation
import NIOCore
import SatchelBackplane
import SatchelRights

/// The agent's side of concurrent-stream slots (the FairPlay Streaming Programming Guide, "Secure Lease"): take a slot
/// before playing, renew its lease
/// while playing, release it at the end. Runs on the agent's isolation.
enum AgentSlots {
    /// A slot call's deadline: shorter than the backplane's others, since playback waits for it (and an offline
    /// device plays its downloads without a slot).
    static let timeout: TimeAmount = .seconds(3)

    /// Takes a slot to play `asset`, or answers why the backplane refuses one.
    static func acquire(_ agent: isolated Agent, asset: String) async throws(AgentError) -> StreamSlotAnswer {
        let server = try agent.device.registered().server
        let (data, _) = try await agent.requests.signedPost("/backplane/slots", server: server, token: nil, timeout: timeout,
                                                           answer: .signed) {
            registration, nonce, time in DeviceRequestClaims(certificate: registration.certificate, assetID: asset, nonce: nonce, time: time)
        }
        let answer = try Agent.decode(StreamSlotAnswer.self, data, what: "the stream slot")
        guard answer.assetID == asset, !answer.granted || answer.slot?.assetID == asset else { throw .invalidAnswer("the stream slot is for another asset") }
        guard !answer.granted || answer.slot != nil else { throw .invalidAnswer("a granted stream slot names no slot") }
        return answer
    }

    /// Renews the slot `id` for another lease (`AgentError.server` with type `slot-lost` once its lease ended).
    static func renew(_ agent: isolated Agent, slot id: String) async throws(AgentError) -> StreamSlotAnswer {
        let server = try agent.device.registered().server
        let (data, _) = try await agent.requests.signedPost("/backplane/slots/\(try path(id))/renew", server: server, token: nil,
                                                           timeout: timeout, answer: .signed) { registration, nonce, time in
            DeviceRequestClaims(certificate: registration.certificate, nonce: nonce, time: time)
        }
        let answer = try Agent.decode(StreamSlotAnswer.self, data, what: "the stream slot's renewal")
        guard answer.granted, answer.slot?.slotID == id else { throw .invalidAnswer("the renewal is for another slot") }
        return answer
    }

    /// Frees the slot `id`.
    static func release(_ agent: isolated Agent, slot id: String) async throws(AgentError) {
        let server = try agent.device.registered().server
        _ = try await agent.requests.signedPost("/backplane/slots/\(try path(id))/release", server: server, token: nil,
                                               timeout: timeout) { registration, nonce, time in
            DeviceRequestClaims(certificate: registration.certificate, nonce: nonce, time: time)
        }
    }

    /// A slot ID as the server gave it, checked before it goes into a path.
    private static func path(_ id: String) throws(AgentError) -> String {
        guard !id.isEmpty, id.utf8.count <= 64, id.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x7A) }) else {
            throw .invalidAnswer("a stream slot's ID is lowercase letters, digits and dashes")
        }
        return id
    }
}
