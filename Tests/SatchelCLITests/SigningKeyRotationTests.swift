import Crypto
import Foundation
import SatchelBytes
import SatchelRights
import SatchelTestSupport
import Testing

/// The server's signing key rotated (issue 49 §1): the old key introduces the new one, devices take it only through
/// that introduction, and nothing signed before stops verifying.
@Suite(.serialized) struct SigningKeyRotationTests {
    typealias Server = AgentCommandTests.Server

    /// The `kid`s of the server keys a device's registration trusts.
    static func trustedKeys(_ device: String) throws -> [String] {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: device + "/device.json"))) as? [String: Any])
        let registration = try #require(document["registration"] as? [String: Any])
        return ((registration["serverKeys"] as? [String: Any])?["keys"] as? [[String: Any]] ?? []).compactMap { $0["kid"] as? String }
    }

    @Test("keys rotate-signing-key: a device registered before takes the new key through the old key's introduction (its registration stays sealed and trusted), acquires and syncs; its licenses and certificate from before stay good; a device registering afresh trusts both")
    func rotated() async throws {
        let server = try await Server("rotation")
        try await server.start()
        defer { server.stop() }
        let newKid = try await TestMedia.offloaded { () throws -> String in
            let device = try StoreTamperingTests.device(server, "device").device
            let before = try Self.trustedKeys(device)
            #expect(before.count == 1)

            server.stop()
            let rotated = try CLIRunner.run(["keys", "rotate-signing-key", "--data-dir", server.data])
            #expect(rotated.status == 0 && rotated.stdout.hasPrefix("signing key "), "\(rotated.stderr)")
            let newKid = try #require(rotated.stdout.split(separator: " ").dropFirst(2).first.map { String($0.dropLast()) })
            #expect(newKid != before[0])
            return newKid
        }
        try await server.start()
        try await TestMedia.offloaded {
            let device = server.directory.appendingPathComponent("device").path
            let keys = try CLIRunner.run(["license", "acquire", "online", "--token", try server.token(), "--data-dir", device])
            #expect(keys.status == 0, "a license signed by the new key: \(keys.stderr)")
            let trusted = try Self.trustedKeys(device)
            #expect(trusted.count == 2 && trusted.contains(newKid), "the new key learnt: \(trusted)")
            #expect(try StoreTamperingTests.status("clip", device) == "valid", "a license the old key signed still verifies")
            let synced = try CLIRunner.run(["license", "sync", "--data-dir", device])
            #expect(synced.status == 0, "the old certificate still opens the server's door: \(synced.stderr)")
            let listed = try CLIRunner.run(["license", "list", "--data-dir", device])
            #expect(listed.status == 0 && !listed.stderr.contains("registration was changed"), "the registration saved with the key stays sealed: \(listed.stderr)")

            let fresh = server.directory.appendingPathComponent("fresh").path
            #expect(try CLIRunner.run(["agent", "register", "--server", server.url, "--token", try server.token(), "--data-dir", fresh]).status == 0)
            #expect(try Set(Self.trustedKeys(fresh)) == Set(trusted), "the key set lists every key")
        }
    }

    @Test("a key set grows only through introductions signed by a key it trusts: a chain in any order is followed; a statement signed by another key under a trusted kid, one whose previous is not its signer, or one with no kid adds nothing")
    func introductions() throws {
        func key(_ kid: String) -> (P256.Signing.PrivateKey, PublicKeyJWK) {
            let key = P256.Signing.PrivateKey()
            return (key, PublicKeyJWK(key.publicKey, kid: kid, use: "sig", alg: "ES256"))
        }
        let (a, aJWK) = key("a"), (b, bJWK) = key("b"), (_, cJWK) = key("c"), (mallory, _) = key("m")
        func introduce(_ new: PublicKeyJWK, by signer: P256.Signing.PrivateKey, kid: String, previous: String? = nil) throws -> String {
            try SignedToken.sign(KeyRotationClaims(previous: previous ?? kid, key: new, issued: Date()), key: signer, kid: kid)
        }
        let trusted = PublicKeySet(keys: [aJWK])
        let chain = [try introduce(cJWK, by: b, kid: "b"), try introduce(bJWK, by: a, kid: "a")]
        #expect(trusted.extended(by: chain).keys.compactMap(\.kid) == ["a", "b", "c"], "c through b through a, listed out of order")
        #expect(trusted.extended(by: [try introduce(cJWK, by: mallory, kid: "a")]).keys.count == 1, "signed by another key under a's name")
        #expect(trusted.extended(by: [try introduce(cJWK, by: a, kid: "a", previous: "z")]).keys.count == 1, "previous is not its signer")
        #expect(trusted.extended(by: [try SignedToken.sign(KeyRotationClaims(previous: "a", key: cJWK, issued: Date()), key: a)]).keys.count == 1, "no kid")
        #expect(trusted.extended(by: ["not a token"]).keys.count == 1)
    }
}
