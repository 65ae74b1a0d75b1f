import Foundation
import SatchelBytes
import SatchelStreams

/// A player's key or license request (pass-through mode), forwarded to the key URI the playlist wrote with the
/// configured extras: custom data goes into a JSON object body as `customData`, else in its header. The answer comes
/// back as the server gave it (an error status as that status).
struct ForwardedKeySource: SegmentSource {
    let path: String
    let target: String

    func answer(_ request: SourceRequest) async throws(PlaybackError) -> SegmentAnswer {
        let files = request.files
        guard let extras = files.context.configuration.forwarding else { throw .notFound }
        var payload = request.body
        var inBody = false
        if let customData = extras.customData, let body = request.body, request.contentType?.lowercased().contains("json") == true,
           var object = try? JSONCoding.decoder().decode([String: JSONValue].self, from: Data(body)),
           case nil = object["customData"] {
            object["customData"] = .string(customData)
            if let encoded = try? JSONCoding.encoder().encode(object) {
                payload = Array(encoded)
                inBody = true
            }
        }
        var headers = extras.httpHeaders(bodyCarriesCustomData: inBody)
        if let contentType = request.contentType, request.body != nil { headers.append(("Content-Type", contentType)) }
        let (sent, target) = (payload, target)
        let answer = try await files.reportingOrigin(path) { () async throws(PlaybackError) -> OriginFetcher.Exchange in
            try await files.context.origin.exchange(target, body: sent, headers: headers, limit: KeyForwarding.maximumAnswer)
        }
        let bytes = answer.body
        return SegmentAnswer(SegmentHead(answer.contentType ?? "application/octet-stream", size: Int64(bytes.count))) { MemoryBody(bytes, transform: .none) }
    }
}
