import Foundation
import SatchelBytes
import SatchelTestSupport
import Testing

/// The backplane's answers are signed for the request they answer (issue 49 §3): a hop between the device and the
/// server (a proxy on a plain-HTTP path) cannot add a command to a sync, or play an old answer again.
@Suite(.serialized) struct SignedAnswerTests {
    /// What the hostile hop does to `/backplane/sync` answers.
    enum Hop: Sendable {
        case pass, appendWipe, replay, stripSignature
    }

    @Test("a hop that adds a wipe to a sync, plays an earlier sync's answer again, or strips the signature changes nothing on the device: the answer is refused (answer-not-signed), the download and license stay, and the server hears answer-refused events; the real wipe still applies")
    func tamperedSync() async throws {
        let world = try await BackplaneCommandTests.World("signed-answers")
        defer { world.server.stop() }
        let origin = try await BackplaneCommandTests.origin(world)
        defer { origin.stop() }
        let proxy = try await RecordingProxy.start(upstream: world.server.url)
        defer { proxy.stop() }
        let hop = Locked(Hop.pass), earlier = Locked<RecordingProxy.Answer?>(nil)
        proxy.rewrite = { request, answer in
            guard request.path.hasPrefix("/backplane/sync"), answer.status == 200 else { return }
            switch hop.withLock({ $0 }) {
            case .pass: earlier.withLock { $0 = answer }
            case .appendWipe:
                guard var json = (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any] else { return }
                let next = ((json["acknowledged"] as? Int) ?? 0) + 1
                json["commands"] = [["id": "injected-wipe", "sequence": next, "issued": json["serverTime"] ?? 0, "kind": "wipe"]]
                answer.body = Array((try? JSONSerialization.data(withJSONObject: json)) ?? Data())
            case .replay:
                if let old = earlier.withLock({ $0 }) { answer = old }
            case .stripSignature:
                answer.headers.removeAll { $0.name.lowercased() == "satchel-signature" }
            }
        }
        try await TestMedia.offloaded {
            let directory = world.server.directory.appendingPathComponent("phone").path
            let registered = try CLIRunner.run(["agent", "register", "--server", proxy.baseURL, "--token", try world.server.token(), "--data-dir", directory])
            #expect(registered.status == 0, "\(registered.stderr)")
            let id = registered.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(try CLIRunner.run(["license", "acquire", "clip", "--token", try world.server.token(), "--data-dir", directory, "--persistent"]).status == 0)
            #expect(try CLIRunner.run(["download", "add", origin.url("clip.mp4"), "--id", "clip", "--data-dir", directory]).status == 0)
            #expect(try CLIRunner.run(["download", "run", "--data-dir", directory]).status == 0)
            let synced = try CLIRunner.run(["agent", "sync", "--data-dir", directory])
            #expect(synced.status == 0, "an answer as the server signed it is applied: \(synced.stderr)")
            #expect(earlier.withLock { $0 }?.header("Satchel-Signature") != nil, "the sync's answer carries its signature")

            // The settings change so that an earlier answer differs from today's, then each attack.
            #expect(try world.backplane(["devices", "disable", id]).status == 0)
            for attack in [Hop.appendWipe, .replay, .stripSignature] {
                hop.withLock { $0 = attack }
                let refused = try CLIRunner.run(["agent", "sync", "--data-dir", directory])
                #expect(!refused.stderr.contains("?after="), "no query string in the message: \(refused.stderr)")
                #expect(refused.status != 0 && refused.stderr.contains("changed on the way and was not applied"),
                        "\(attack): \(refused.stderr)")
                #expect(try BackplaneCommandTests.listJSON(directory).count == 1, "\(attack): the download stays")
                let rights = try CLIRunner.run(["rights", "clip", "--data-dir", directory, "--json"])
                #expect(rights.stdout.contains("\"valid\""), "\(attack): the license stays: \(rights.stdout)")
            }

            // The hop gone: the refusals reach the server as events, and the operator's real wipe applies.
            hop.withLock { $0 = .pass }
            #expect(try CLIRunner.run(["agent", "sync", "--data-dir", directory]).status == 0)
            let refusals = try EventCommandTests.list(world, ["--kind", "answer-refused"])
            #expect(refusals.count == 3 && refusals.allSatisfy { $0["deviceID"] as? String == id }, "\(refusals)")
            #expect(try world.backplane(["devices", "wipe", id]).status == 0)
            let wiped = try CLIRunner.run(["agent", "sync", "--data-dir", directory])
            let left = try BackplaneCommandTests.listJSON(directory)
            #expect(wiped.status == 0 && left.isEmpty, "the signed wipe applies: \(wiped.stderr)")
        }
    }
}
