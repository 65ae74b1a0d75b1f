import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import SatchelBytes
import SatchelFairPlay
import SatchelLicensing
import SatchelProtection
import SatchelServer
import SatchelTestSupport
import Testing

/// Seed 000 §5.3.3.2: custom data the app adds to a license challenge, which the client does not interpret, reaches the
/// server's license policy (here an HTTP hook of the operator's) and the audit record, on every license type.
@Suite("License policy hook: custom data on every license type")
struct PolicyHookTests {
    static func problem(_ response: TestResponse) throws -> (type: String, detail: String) {
        let json = try LicenseServerTests.json(response.body)
        return ((json["type"] as? String ?? "").components(separatedBy: "/").last ?? "", json["detail"] as? String ?? "")
    }

    @Test("Clear Key, AES-128 and FairPlay: the hook sees the custom data, narrows the rights or refuses; the audit keeps it; no answer means no license")
    func everyLicenseType() async throws {
        let hook = await TestPolicyHook()
        defer { hook.stop() }
        let world = try await LicenseServerTests.world("sqlite", packaged: false)
        defer { Task { await world.database.shutdown() } }
        var service = world.service
        service.policyHook = try WebhookPolicyHook(url: hook.url, timeout: .seconds(15))  // a loaded machine answers late
        let app = LicenseServer.application(service: service, certificate: world.certificate, port: 0)
        let token = try await world.token(asset: world.assetID)
        let kid = Base64URL.encode(world.key.keyID.bytes)
        @Sendable func clearKey(_ custom: String?) throws -> ByteBuffer {
            var body: [String: Any] = ["kids": [kid], "type": "temporary"]
            if let custom { body["customData"] = custom }
            return ByteBuffer(data: try JSONSerialization.data(withJSONObject: body))
        }
        try await app.test(.live) { client in
            let headers = LicenseServerTests.bearer(token)
            // Clear Key: issued with the asset's 600 s lease, or the hook's 60 s for the basic plan.
            let full = try await client.execute(uri: "/clearkey/license", method: .post, headers: headers, body: try clearKey("<plan>full</plan>"))
            let basic = try await client.execute(uri: "/clearkey/license", method: .post, headers: headers, body: try clearKey("<plan>basic</plan>"))
            #expect(full.status == .ok && basic.status == .ok)
            func expiry(_ response: TestResponse) -> TimeInterval {
                (response.headers[HTTPField.Name("Satchel-License-Expires")!].flatMap { HTTPDate.parse($0) }).map { TimeInterval($0) - Date().timeIntervalSince1970 } ?? 0
            }
            #expect(expiry(full) > 500 && expiry(basic) < 61 && expiry(basic) > 30, "the hook's lease shortens the license")
            let refused = try await client.execute(uri: "/clearkey/license", method: .post, headers: headers, body: try clearKey("<plan>none</plan>"))
            #expect(refused.status == .forbidden)
            #expect(try Self.problem(refused) == ("refused-by-policy", "the license policy refused this license: not in your plan"))
            for (custom, what) in [("slow", "timed out"), ("broken", "HTTP 500")] {
                let failed = try await client.execute(uri: "/clearkey/license", method: .post, headers: headers, body: try clearKey(custom))
                #expect(failed.status == .serviceUnavailable, "\(custom)")
                let (type, detail) = try Self.problem(failed)
                #expect(type == "policy-unavailable" && detail.contains(what), "\(custom): \(detail)")
            }

            // AES-128: custom data in the header (the GET has no body).
            var keyHeaders = headers
            keyHeaders[HTTPField.Name("X-Satchel-Custom-Data")!] = Data("<plan>full</plan>".utf8).base64EncodedString()
            #expect(try await client.execute(uri: "/keys/\(world.key.keyID.hex)", method: .get, headers: keyHeaders).status == .ok)
            keyHeaders[HTTPField.Name("X-Satchel-Custom-Data")!] = Data("<plan>none</plan>".utf8).base64EncodedString()
            #expect(try await client.execute(uri: "/keys/\(world.key.keyID.hex)", method: .get, headers: keyHeaders).status == .forbidden)
            keyHeaders[HTTPField.Name("X-Satchel-Custom-Data")!] = "%%% not base64"
            #expect(try await client.execute(uri: "/keys/\(world.key.keyID.hex)", method: .get, headers: keyHeaders).status == .badRequest)

            // FairPlay: the custom data in the JSON body; the hook's lease reaches the CKC.
            let (spc, session) = try LicenseServerTests.simulator().makeSPC(.init(assetID: Array(world.assetID.utf8),
                                                                                  playbackState: .init(creationDate: 1, state: .readyToStart, sessionID: 1)))
            let body = try JSONSerialization.data(withJSONObject: ["spc": Data(spc).base64EncodedString(), "customData": "<plan>basic</plan>"])
            let answer = try await client.execute(uri: "/fps/license", method: .post, headers: headers, body: ByteBuffer(data: body))
            #expect(answer.status == .ok)
            let ckcText = try LicenseServerTests.json(answer.body)["ckc"] as? String ?? ""
            let ckc = try DeviceSimulator.openCKC(Array(Data(base64Encoded: ckcText) ?? Data()), session: session)
            #expect(ckc.duration?.leaseSeconds == 60, "the hook's override is in the CKC")
        }
        let asked = try hook.asked.current.map { try JSONCoding.decoder().decode(LicenseRequestFacts.self, from: $0) }
        #expect(Set(asked.map(\.type)) == ["clearkey-temporary", "aes-128", "fairplay"])
        #expect(asked.allSatisfy { $0.subject == "user-1" && $0.assetID == world.assetID && $0.policy.leaseSeconds == 600 },
                "the hook sees the rights before its own overrides")
        let audit = try await world.store.licenses().filter { $0.assetID == world.assetID }
        #expect(audit.map(\.customData).sorted { ($0 ?? "") < ($1 ?? "") } == ["<plan>basic</plan>", "<plan>basic</plan>", "<plan>full</plan>", "<plan>full</plan>"],
                "issued licenses keep their custom data; refused and unanswered ones are not recorded")
    }

    @Test("custom data larger than 64 KB is refused before the hook is asked")
    func tooLarge() async throws {
        let hook = await TestPolicyHook()
        defer { hook.stop() }
        let world = try await LicenseServerTests.world("sqlite", packaged: false)
        defer { Task { await world.database.shutdown() } }
        var service = world.service
        service.policyHook = try WebhookPolicyHook(url: hook.url)
        let token = try await world.token(asset: world.assetID)
        let request = try ClearKey.Request(json: Array(#"{"kids":["\#(Base64URL.encode(world.key.keyID.bytes))"],"type":"temporary"}"#.utf8))
        await #expect(throws: LicensingError.badRequest("custom data is at most 65536 bytes")) {
            _ = try await service.clearKeyLicense(request, token: token, customData: String(repeating: "x", count: 65_537))
        }
        #expect(hook.asked.current.isEmpty)
        #expect(throws: LicensingError.self) { _ = try WebhookPolicyHook(url: "file:///etc/passwd") }
    }
}
