import Foundation
import Hummingbird
import SatchelBytes

/// A license policy hook of an operator's, for tests: it keeps each question it is asked (the JSON the server POSTs)
/// and answers by the custom data: `<plan>none</plan>` refused ("not in your plan"), `<plan>basic</plan>` issued with a
/// 60-second lease and rental, `slow` after a minute, `broken` with HTTP 500, anything else issued as it is.
public final class TestPolicyHook: Sendable {
    /// The questions, each the JSON body the server sent.
    public let asked = Locked<[Data]>([])
    private let task: Task<Void, any Error>
    /// The hook's URL.
    public let url: String

    /// Starts the hook on a free loopback port.
    public init() async {
        let asked = asked
        let router = Router()
        router.post("/policy") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            let data = Data(body.readableBytesView)
            asked.withLock { $0.append(data) }
            let question = (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
            let custom = question["customData"] as? String ?? ""
            let answer: String
            if custom.contains("slow") {
                try await Task.sleep(for: .seconds(60))
                answer = #"{"issue": true}"#
            } else if custom.contains("broken") {
                return Response(status: .internalServerError)
            } else if custom.contains("<plan>none</plan>") {
                answer = #"{"issue": false, "reason": "not in your plan"}"#
            } else if custom.contains("<plan>basic</plan>") {
                answer = #"{"issue": true, "policy": {"leaseSeconds": 60, "rentalSeconds": 60}}"#
            } else {
                answer = #"{"issue": true}"#
            }
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: answer)))
        }
        let started = await LoopbackServer.start(router, label: "policy-hook")
        task = started.task
        url = started.baseURL + "/policy"
    }

    /// Stops the hook.
    public func stop() { task.cancel() }

    /// The `customData` and `type` of each question.
    public var questions: [(type: String, customData: String?)] {
        asked.current.map { data in
            let question = (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
            return (question["type"] as? String ?? "", question["customData"] as? String)
        }
    }
}
