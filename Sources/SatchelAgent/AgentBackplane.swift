import AsyncHTTPClient
import Foundation
import NIOCore
import SatchelBackplane
import SatchelBytes
import SatchelRights

/// The agent's side of the backplane (the download-to-go backplane): syncs (the commands after the last one
/// applied, the toggle, the settings), acknowledgements recorded in the sealed state, download permission, and the
/// server-sent event stream. Runs on the agent's isolation, except the stream's reading.
enum AgentBackplane {
    /// A backplane call's deadline: a server that is down is said soon (AsyncHTTPClient retries a refused connection
    /// until the deadline), and the engine's asset waits for its permission.
    static let timeout: TimeAmount = .seconds(10)

    static func status(_ agent: isolated Agent) async throws(AgentError) -> BackplaneStatus {
        try await agent.store.snapshot().state.backplane ?? BackplaneStatus()
    }

    /// Keeps what a registration's answer said of downloading (a server without the backplane says nothing); a new
    /// registration starts a new ledger (its commands are numbered from 1 again).
    static func enrolled(_ agent: isolated Agent, downloadEnabled: Bool?, notice: String?) async throws(AgentError) {
        try await agent.store.change { (state, _) throws(AgentError) -> (Void, [LicenseStore.RowChange]) in
            var status = BackplaneStatus()
            status.downloadEnabled = downloadEnabled ?? true
            status.registrationNotice = notice.flatMap(BackplaneNotice.init(rawValue:))
            state.backplane = status
            return ((), [])
        }
    }

    /// One sync: the server's answer, kept (toggle, settings, killed), and the commands due after the last applied.
    static func sync(_ agent: isolated Agent) async throws(AgentError) -> BackplanePull {
        let server = try agent.device.registered().server
        let before = try await status(agent)
        let data = try await agent.requests.signedGet("/backplane/sync?after=\(before.ledger.lastApplied)", server: server, timeout: timeout,
                                                    answer: .signed)
        let answer = try Agent.decode(BackplaneSyncAnswer.self, data, what: "the backplane's sync")
        guard answer.deviceID == (try agent.device.registered().deviceID) else { throw .invalidAnswer("the sync is for another device") }
        let wall = agent.clockReader.read().wall
        let status = try await agent.store.change { (state, _) throws(AgentError) -> (BackplaneStatus, [LicenseStore.RowChange]) in
            var status = state.backplane ?? BackplaneStatus()
            status.ledger.skip(through: answer.acknowledged)
            status.downloadEnabled = answer.downloadEnabled && answer.state == .active
            status.settings = answer.settings
            status.lastSync = wall
            state.backplane = status
            return (status, [])
        }
        return BackplanePull(answer: answer, due: status.ledger.due(answer.commands))
    }

    /// Acknowledges `command` to the server and records it applied (a command out of order is refused).
    static func acknowledge(_ agent: isolated Agent, _ command: BackplaneCommand) async throws(AgentError) {
        let server = try agent.device.registered().server
        let id = command.id.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-"))) ?? command.id
        _ = try await agent.requests.signedPost("/backplane/commands/\(id)/ack", server: server, token: nil, timeout: timeout) { registration, nonce, time in
            DeviceRequestClaims(certificate: registration.certificate, nonce: nonce, time: time)
        }
        try await record(agent, command)
    }

    /// Records `command` applied in the sealed state: the toggle and settings it carries, a kill.
    static func record(_ agent: isolated Agent, _ command: BackplaneCommand) async throws(AgentError) {
        try await agent.store.change { (state, _) throws(AgentError) -> (Void, [LicenseStore.RowChange]) in
            var status = state.backplane ?? BackplaneStatus()
            guard status.ledger.applied(command) else { return ((), []) }
            switch command.action {
            case let .downloadEnabled(enabled): status.downloadEnabled = enabled
            case let .settings(settings): status.settings = status.settings.updated(with: settings)
            case .kill:
                status.killed = true
                status.downloadEnabled = false
            case .deleteAsset, .wipe: break
            }
            state.backplane = status
            return ((), [])
        }
    }

    /// Whether the backplane lets this device download `asset` (a grant is recorded there).
    static func permission(_ agent: isolated Agent, asset: String) async throws(AgentError) -> BackplanePermissionAnswer {
        let server = try agent.device.registered().server
        let (data, _) = try await agent.requests.signedPost("/backplane/permissions", server: server, token: nil, timeout: timeout,
                                                             answer: .signed) { registration, nonce, time in
            DeviceRequestClaims(certificate: registration.certificate, assetID: asset, nonce: nonce, time: time)
        }
        let answer = try Agent.decode(BackplanePermissionAnswer.self, data, what: "the download permission")
        guard answer.assetID == asset else { throw .invalidAnswer("the permission is for another asset") }
        return answer
    }

    /// Asks the backplane to turn this device's downloading on or off (on only within its user's device limit), keeps
    /// what it saved, and reports the result as a device-save-result notice.
    static func updateDownloadEnabled(_ agent: isolated Agent, _ wanted: Bool) async throws(AgentError) -> Bool {
        let saved: Bool
        do throws(AgentError) {
            let server = try agent.device.registered().server
            let (data, _) = try await agent.requests.signedPost("/backplane/download-enabled", server: server, token: nil, timeout: timeout,
                                                                 answer: .signed) { registration, nonce, time in
                DeviceRequestClaims(certificate: registration.certificate, nonce: nonce, time: time, downloadEnabled: wanted)
            }
            let answer = try Agent.decode(DownloadToggleAnswer.self, data, what: "the download toggle")
            guard answer.deviceID == (try agent.device.registered().deviceID) else { throw .invalidAnswer("the toggle is for another device") }
            saved = answer.downloadEnabled
            try await agent.store.change { (state, _) throws(AgentError) -> (Void, [LicenseStore.RowChange]) in
                var status = state.backplane ?? BackplaneStatus()
                status.downloadEnabled = saved
                state.backplane = status
                return ((), [])
            }
        } catch {
            agent.reporter.report(.notice(.deviceSaveResult, detail: "downloads not turned \(wanted ? "on" : "off"): \(error.description)"))
            throw error
        }
        agent.reporter.report(.notice(.deviceSaveResult, detail: "downloads \(saved ? "on" : "off")"))
        return saved
    }

    static func unregister(_ agent: isolated Agent) throws(AgentError) {
        try agent.device.forget()
    }

    /// Tells the backplane the device deleted `asset` (its grant is given back).
    static func releasePermission(_ agent: isolated Agent, asset: String) async throws(AgentError) {
        let server = try agent.device.registered().server
        _ = try await agent.requests.signedPost("/backplane/permissions/release", server: server, token: nil, timeout: timeout) {
            registration, nonce, time in DeviceRequestClaims(certificate: registration.certificate, assetID: asset, nonce: nonce, time: time)
        }
    }

    /// The stream's request: signed now, with the cursor.
    static func streamRequest(_ agent: isolated Agent) async throws(AgentError) -> HTTPClientRequest {
        let server = try agent.device.registered().server
        let after = try await status(agent).ledger.lastApplied
        let claims = DeviceRequestClaims(certificate: try agent.device.registered().certificate, nonce: Hex.encode(SecureRandom.bytes(16)),
                                         time: try await agent.clock.requestTime(server: server), route: "GET /backplane/stream")
        let client = try LicenseServerClient(server: server, http: agent.transport.client)
        var request = HTTPClientRequest(url: client.url("/backplane/stream"))
        request.headers.add(name: AgentRequests.deviceRequestHeader, value: try agent.device.sign(claims))
        request.headers.add(name: "Last-Event-ID", value: String(after))
        request.headers.add(name: "Accept", value: "text/event-stream")
        return request
    }

    /// Reads the device's event stream, calling `onEvent` for each event, until the server ends it, `onEvent` answers
    /// false, `window` passes (the caller connects again), or it fails.
    static func listen(_ agent: Agent, window: TimeAmount, onEvent: @Sendable (EventStreamParser.Event) async -> Bool) async throws(AgentError) {
        let request = try await streamRequest(agent)
        do {
            let response = try await agent.transport.client.execute(request, timeout: window)
            guard response.status == .ok else {
                let body = try await response.body.collect(upTo: LicenseServerClient.maximumAnswer)
                let problem = try? JSONCoding.decoder().decode(LicenseServerClient.ProblemBody.self, from: Data(body.readableBytesView))
                throw AgentError.server(type: problem?.type.map(LicenseServerClient.slug) ?? "http-\(response.status.code)",
                                        status: Int(response.status.code), detail: String((problem?.detail ?? response.status.reasonPhrase).prefix(300)))
            }
            var parser = EventStreamParser()
            for try await chunk in response.body {
                for event in parser.feed(chunk.readableBytesView) where !(await onEvent(event)) { return }
            }
        } catch let error as AgentError {
            throw error
        } catch {
            throw .network("the backplane's stream: \(LicenseServerClient.reason(error))")
        }
    }
}
