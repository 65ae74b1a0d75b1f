import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SatchelBytes

/// `--server` and `--operator-key-file` of `satchel backplane` (or `$SATCHEL_SERVER`, `$SATCHEL_OPERATOR_KEY`).
struct OperatorOptions: ParsableArguments {
    @Option(help: "The server (satchel serve), e.g. http://127.0.0.1:8080 (or $SATCHEL_SERVER).") var server: String?
    @Option(name: .customLong("operator-key-file"), help: "A file holding the operator key (or the key itself in $SATCHEL_OPERATOR_KEY).")
    var operatorKeyFile: String?
    @Flag(help: "Print JSON.") var json = false

    /// The client these options name.
    func client() throws -> OperatorClient {
        let environment = ProcessInfo.processInfo.environment
        guard let server = server ?? environment["SATCHEL_SERVER"] else { throw CLIError("give --server (or $SATCHEL_SERVER)") }
        let key: String
        if let path = operatorKeyFile {
            guard let data = FileManager.default.contents(atPath: path) else { throw CLIError("cannot read the operator key file \(path)") }
            key = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        } else if let value = environment["SATCHEL_OPERATOR_KEY"] {
            key = value.trimmingCharacters(in: .whitespacesAndNewlines)
        } else {
            throw CLIError("give --operator-key-file (or $SATCHEL_OPERATOR_KEY)")
        }
        guard !key.isEmpty else { throw CLIError("the operator key is empty") }
        return try OperatorClient(server: server, key: key)
    }
}

/// The operator API of a running server (`/backplane/operator/…`): JSON in and out, the operator key as a bearer
/// token; a problem answer becomes one line naming its detail.
struct OperatorClient: Sendable {
    let base: String
    let key: String
    static let maximumAnswer = 16 << 20

    init(server: String, key: String) throws {
        guard let url = URL(string: server), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil else {
            throw CLIError("--server must be an http or https URL")
        }
        base = server.hasSuffix("/") ? String(server.dropLast()) : server
        self.key = key
    }

    /// `path` (under `/backplane/operator/`) with `method`, and `body` as JSON; the answer decoded as `T`.
    func call<T: Decodable>(_ method: HTTPMethod, _ path: String, body: (some Encodable)? = Optional<String>.none, as type: T.Type) async throws -> T {
        var request = HTTPClientRequest(url: base + "/backplane/operator/" + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(key)")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONCoding.encoder().encode(body)))
        }
        let response: HTTPClientResponse
        let data: ByteBuffer
        do {
            response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            data = try await response.body.collect(upTo: Self.maximumAnswer)
        } catch {
            throw CLIError("the server cannot be reached: \(String(describing: error).prefix(160))")
        }
        let bytes = Data(data.readableBytesView)
        guard (200..<300).contains(response.status.code) else {
            let problem = (try? JSONSerialization.jsonObject(with: bytes)) as? [String: Any]
            throw CLIError("the server refused (\(response.status.code)): \(problem?["detail"] as? String ?? response.status.reasonPhrase)")
        }
        do {
            return try JSONCoding.decoder().decode(type, from: bytes)
        } catch {
            throw CLIError("the server's answer is not what was expected: \(error)")
        }
    }

    /// A path segment: percent-encoded (a device may be `ext:ID`, a user any text).
    static func segment(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~:"))) ?? text
    }
}
