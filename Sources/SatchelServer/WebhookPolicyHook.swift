import AsyncHTTPClient
import Foundation
import NIOCore
import SatchelBytes
import SatchelLicensing

/// The license policy hook of `satchel serve --policy-hook URL`: before each license, the server POSTs the
/// ``LicenseRequestFacts`` as JSON to the operator's endpoint, which answers `{"issue": true}` (optionally with
/// `"policy"`: overrides of the rights, as a token's `policy` claim gives them) or `{"issue": false, "reason": "…"}`.
/// No answer within the timeout, a status other than 200, or a body it cannot read refuses the license
/// (``LicensingError/policyUnavailable(_:)``, 503): the hook sees every license that goes out.
package struct WebhookPolicyHook: LicensePolicyHook {
    /// The endpoint.
    package let url: String
    /// How long the endpoint may take.
    package let timeout: Duration
    /// The largest answer read.
    static let maximumAnswer = 64 * 1024

    /// A hook at `url` (http or https).
    package init(url: String, timeout: Duration = .seconds(2)) throws(LicensingError) {
        guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme?.lowercased() ?? ""), parsed.host != nil else {
            throw .configuration("the policy hook must be an http or https URL")
        }
        self.url = url
        self.timeout = timeout
    }

    /// What the endpoint answers.
    struct Answer: Decodable {
        var issue: Bool
        var reason: String?
        var policy: PolicyOverrides?
    }

    /// Asks the endpoint.
    package func decide(_ facts: LicenseRequestFacts) async throws(LicensingError) -> LicensePolicyVerdict {
        let answer: Answer
        do {
            var request = HTTPClientRequest(url: url)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "Accept", value: "application/json")
            request.body = .bytes(try JSONCoding.encoder().encode(facts))
            let response = try await HTTPClient.shared.execute(request, timeout: TimeAmount(timeout))  // clamped, never overflows
            guard response.status == .ok else { throw LicensingError.policyUnavailable("the policy hook answered HTTP \(response.status.code)") }
            let body = try await response.body.collect(upTo: Self.maximumAnswer)
            guard let decoded = try? JSONCoding.decoder().decode(Answer.self, from: Data(body.readableBytesView)) else {
                throw LicensingError.policyUnavailable("the policy hook's answer is not {\"issue\": true|false, …}")
            }
            answer = decoded
        } catch let error as LicensingError {
            throw error
        } catch {
            throw .policyUnavailable("the policy hook did not answer (\(Self.kind(of: error)))")
        }
        return answer.issue ? .issue(answer.policy) : .refuse(answer.reason ?? "refused by the license policy")
    }

    /// A word on a transport failure (never the URL: its query may carry a secret).
    private static func kind(of error: any Error) -> String {
        if let client = error as? HTTPClientError {
            if client == .deadlineExceeded || client == .readTimeout || client == .connectTimeout { return "timed out" }
            if client == .bodyLengthMismatch || client == .remoteConnectionClosed { return "connection closed" }
        }
        if error is NIOTooManyBytesError { return "answer too long" }
        return "unreachable"
    }
}
