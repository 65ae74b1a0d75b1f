import AsyncHTTPClient
import Foundation
import NIOCore
import SatchelBackplane
import SatchelBytes

extension BackplaneBenchmark {
    /// Opens every device's event stream on `streamFrom`, then issues `commands` wipes (to distinct devices, 10 ms
    /// apart) through the operator API of `issueOn`: each one's latency from the request to the device's event, and the
    /// streaming node's memory per connected device.
    func push(issueOn: Node, streamFrom: Node, _ devices: [Device], _ client: HTTPClient, memoryBefore: Double) async throws -> ([Double], Double) {
        let clock = ContinuousClock()
        let received = Locked<[String: ContinuousClock.Instant]>([:])
        let connected = Locked(0)
        let streams = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for device in devices {
                    let signed = try device.signed("GET /backplane/stream")
                    group.addTask { try await Self.stream(device.id, signed, from: streamFrom, client, connected: connected, received: received) }
                }
                try await group.waitForAll()
            }
        }
        defer { streams.cancel() }
        let deadline = clock.now.advanced(by: .seconds(120))
        while connected.current < devices.count, clock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        guard connected.current == devices.count else { throw BenchmarkError(message: "only \(connected.current) of \(devices.count) streams opened") }
        try await Task.sleep(for: .seconds(1))
        let perDevice = max(0, Self.residentKilobytes(streamFrom.child.pid) - memoryBefore) / Double(devices.count)

        var issued: [String: ContinuousClock.Instant] = [:]
        for device in devices.shuffled().prefix(commands) {
            var request = HTTPClientRequest(url: issueOn.url + "/backplane/operator/devices/\(device.id)/wipe")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(operatorKey)")
            issued[device.id] = clock.now
            let response = try await client.execute(request, timeout: .seconds(30))
            _ = try await response.body.collect(upTo: 1 << 16)
            guard response.status == .created else { throw BenchmarkError(message: "the wipe was refused: \(response.status)") }
            try await Task.sleep(for: .milliseconds(10))
        }
        let waitUntil = clock.now.advanced(by: .seconds(10))
        while received.withLock({ answers in issued.keys.contains { answers[$0] == nil } }), clock.now < waitUntil {
            try await Task.sleep(for: .milliseconds(20))
        }
        let answers = received.current
        let latencies = issued.compactMap { id, start in answers[id].map { Double(start.duration(to: $0).components.attoseconds) / 1e18 + Double(start.duration(to: $0).components.seconds) } }
        return (latencies, perDevice)
    }

    /// One device's stream: counted as connected at its first event, each `command` event's arrival kept.
    static func stream(_ id: String, _ signed: String, from node: Node, _ client: HTTPClient, connected: Locked<Int>,
                       received: Locked<[String: ContinuousClock.Instant]>) async throws {
        var request = HTTPClientRequest(url: node.url + "/backplane/stream")
        request.headers.add(name: "Satchel-Device-Request", value: signed)
        let response = try await client.execute(request, timeout: .minutes(30))
        guard response.status == .ok else { throw BenchmarkError(message: "a stream was refused: \(response.status)") }
        var parser = EventStreamParser()
        var first = true
        for try await chunk in response.body {
            for event in parser.feed(chunk.readableBytesView) {
                if first {
                    connected.withLock { $0 += 1 }
                    first = false
                }
                if event.name == "command" {
                    let now = ContinuousClock.now
                    received.withLock { $0[id] = $0[id] ?? now }
                }
            }
        }
    }
}
