import Foundation
import SatchelBackplane
import SatchelBytes
import SatchelRights

/// What a device reports to the backplane, as an app calls it
/// (`agent.activity`): events kept on disk as they happen, sent in batches at the next sync. An event is removed
/// only once the backplane has kept it, and the backplane keeps an event sent twice once: none is lost or counted
/// twice, whatever fails between.
public struct DeviceActivity: Sendable {
    let agent: Agent

    /// Records an event of `kind` now, unless the backplane's settings turned its kind off (mandatory kinds are
    /// always recorded). Answers whether it was kept.
    @discardableResult
    public func record(_ kind: DeviceEventKind, asset: String? = nil, reason: String? = nil, seconds: Double? = nil,
                       detail: String? = nil) async throws(AgentError) -> Bool {
        try await AgentActivity.record(agent, kind, asset: asset, reason: reason, seconds: seconds, detail: detail)
    }

    /// The events waiting to be sent.
    public func pending() async throws(AgentError) -> [DeviceEvent] { try await AgentActivity.outbox(agent).pending(limit: EventOutbox.capacity) }

    /// Sends the waiting events to the backplane in batches; answers how many it kept as new. A device not
    /// registered sends nothing.
    @discardableResult
    public func send() async throws(AgentError) -> Int { try await AgentActivity.send(agent) }
}

/// The agent's side of event reporting, on its isolation.
enum AgentActivity {
    /// The most batches one ``send(_:)`` sends (the outbox's capacity over a batch's size).
    static let batchesPerSend = EventOutbox.capacity / EventRules.batchLimit

    static func outbox(_ agent: isolated Agent) async throws(AgentError) -> EventOutbox {
        if let outbox = agent.outbox { return outbox }
        // Opened once: callers that come while it opens (the engine's events and a sync record at once) wait for it,
        // rather than migrating the same file side by side (the loser failed, and its event was lost).
        let opening = agent.outboxOpening ?? Task { [dataDirectory = agent.dataDirectory, logger = agent.logger] in
            try await EventOutbox(dataDirectory: dataDirectory, logger: logger)
        }
        agent.outboxOpening = opening
        do {
            let opened = try await opening.value
            if agent.outbox == nil { agent.outbox = opened }
            agent.outboxOpening = nil
            return opened
        } catch {
            agent.outboxOpening = nil
            throw error as? AgentError ?? .storage("the events' outbox: \(error)")
        }
    }

    static func record(_ agent: isolated Agent, _ kind: DeviceEventKind, asset: String?, reason: String?, seconds: Double?,
                       detail: String?) async throws(AgentError) -> Bool {
        let disabled = (try? await AgentBackplane.status(agent))?.settings.disabledEvents
        guard EventRules.records(kind, disabled: disabled) else { return false }
        let event = DeviceEvent(kind: kind, time: agent.clockReader.read().wall, assetID: asset.map { String($0.prefix(200)) },
                                reason: reason.map { String($0.prefix(100)) }, seconds: seconds.map { max(0, min($0, 10_000_000)) },
                                detail: detail.map { String($0.prefix(500)) })
        return try await outbox(agent).add(event)
    }

    static func send(_ agent: isolated Agent) async throws(AgentError) -> Int {
        guard let registration = agent.identity.registration else { return 0 }
        let outbox = try await outbox(agent)
        var recorded = 0, sent = 0
        for _ in 0..<batchesPerSend {
            let batch = try await outbox.pending(limit: EventRules.batchLimit)
            guard !batch.isEmpty else { break }
            let answer = try await AgentRequests.signedBody(agent, "/backplane/events", body: batch, server: registration.server,
                                                            timeout: AgentBackplane.timeout)
            recorded += try Agent.decode(EventBatchAnswer.self, answer, what: "the events' receipt").recorded
            try await outbox.remove(batch.map(\.eventID))
            sent += batch.count
        }
        if sent > 0 { agent.report(.notice(.logsSent, detail: "\(sent) event\(sent == 1 ? "" : "s") delivered")) }
        return recorded
    }
}
