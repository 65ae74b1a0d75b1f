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
        try await agent.recordActivity(kind, asset: asset, reason: reason, seconds: seconds, detail: detail)
    }

    /// The events waiting to be sent.
    public func pending() async throws(AgentError) -> [DeviceEvent] { try await agent.pendingActivity() }

    /// Sends the waiting events to the backplane in batches; answers how many it kept as new. A device not
    /// registered sends nothing.
    @discardableResult
    public func send() async throws(AgentError) -> Int { try await agent.sendActivity() }
}

/// The agent's side of event reporting, on its isolation: the outbox the events wait in, opened on first use, once.
final class AgentActivity {
    /// The most batches one ``send(through:)`` sends (the outbox's capacity over a batch's size).
    static let batchesPerSend = EventOutbox.capacity / EventRules.batchLimit
    private let dataDirectory: String
    private let store: LicenseStore
    private let reader: any ClockReader
    private let reporter: AgentReporter
    /// The events waiting for the backplane (`opening` while it opens).
    private var outbox: EventOutbox?
    private var opening: Task<EventOutbox, any Error>?

    init(dataDirectory: String, store: LicenseStore, reader: any ClockReader, reporter: AgentReporter) {
        self.dataDirectory = dataDirectory
        self.store = store
        self.reader = reader
        self.reporter = reporter
    }

    /// The outbox, opened now if it is not yet.
    nonisolated(nonsending) func opened() async throws(AgentError) -> EventOutbox {
        if let outbox { return outbox }
        // Opened once: callers that come while it opens (the engine's events and a sync record at once) wait for it,
        // rather than migrating the same file side by side (the loser failed, and its event was lost).
        let task = opening ?? Task { [dataDirectory, logger = reporter.logger] in
            try await EventOutbox(dataDirectory: dataDirectory, logger: logger)
        }
        opening = task
        do {
            let made = try await task.value
            if outbox == nil { outbox = made }
            opening = nil
            return made
        } catch {
            opening = nil
            throw error as? AgentError ?? .storage("the events' outbox: \(error)")
        }
    }

    /// Closes the outbox, if it was opened.
    nonisolated(nonsending) func close() async {
        await outbox?.close()
    }

    nonisolated(nonsending) func record(_ kind: DeviceEventKind, asset: String? = nil, reason: String? = nil, seconds: Double? = nil,
                                        detail: String? = nil) async throws(AgentError) -> Bool {
        let disabled = (try? await store.snapshot())?.state.backplane?.settings.disabledEvents
        guard EventRules.records(kind, disabled: disabled) else { return false }
        let event = DeviceEvent(kind: kind, time: reader.read().wall, assetID: asset.map { String($0.prefix(200)) },
                                reason: reason.map { String($0.prefix(100)) }, seconds: seconds.map { max(0, min($0, 10_000_000)) },
                                detail: detail.map { String($0.prefix(500)) })
        return try await opened().add(event)
    }

    /// Sends the waiting events in batches through `requests`, for `server`; answers how many the backplane kept as new.
    nonisolated(nonsending) func send(to server: String, through requests: AgentRequests) async throws(AgentError) -> Int {
        let outbox = try await opened()
        var recorded = 0, sent = 0
        for _ in 0..<Self.batchesPerSend {
            let batch = try await outbox.pending(limit: EventRules.batchLimit)
            guard !batch.isEmpty else { break }
            let answer = try await requests.signedBody("/backplane/events", body: batch, server: server, timeout: AgentBackplane.timeout)
            recorded += try Agent.decode(EventBatchAnswer.self, answer, what: "the events' receipt").recorded
            try await outbox.remove(batch.map(\.eventID))
            sent += batch.count
        }
        if sent > 0 { reporter.report(.notice(.logsSent, detail: "\(sent) event\(sent == 1 ? "" : "s") delivered")) }
        return recorded
    }
}
