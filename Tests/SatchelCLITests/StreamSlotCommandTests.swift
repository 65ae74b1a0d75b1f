import Foundation
import SatchelTestSupport
import Testing

/// Stream slots end to end (seed 004 "Secure Lease"; issue "Subscriptions, events and stream slots" §3): a real
/// `satchel serve` with the backplane, real devices playing downloaded assets through `satchel play`, the operator
/// through `satchel backplane`.
@Suite(.serialized) struct StreamSlotCommandTests {
    @Test("an account's third concurrent stream for a limit of two is refused with the reason; accepted once a stopped player's slot is released, and once a vanished player's lease ends; the operator lists the slots held")
    func thirdStreamRefused() async throws {
        let world = try await BackplaneCommandTests.World("stream-slots")
        defer { world.server.stop() }
        let origin = try await BackplaneCommandTests.origin(world)
        defer { origin.stop() }
        try await TestMedia.offloaded {
            #expect(try world.backplane(["limits", "set", "--user", "family", "--max-streams", "2"]).status == 0)
            #expect(try world.backplane(["settings", "set", "--stream-lease", "3"]).status == 0)
            let devices = try ["phone", "tv", "tablet"].map { name in
                let device = try world.device(name, user: "family")
                #expect(try CLIRunner.run(["download", "add", origin.url("clip.mp4"), "--id", "clip", "--data-dir", device.directory]).status == 0)
                let run = try CLIRunner.run(["download", "run", "--data-dir", device.directory])
                #expect(run.status == 0, "\(run.stderr)")
                return device
            }
            func play(_ index: Int) throws -> LineReader { try LineReader(["play", "clip", "--data-dir", devices[index].directory]) }

            let phone = try play(0), tv = try play(1)
            defer { phone.stop(); tv.stop() }
            #expect(phone.wait(for: "http://127.0.0.1:", seconds: 30) && tv.wait(for: "http://127.0.0.1:", seconds: 30))
            let listed = try world.backplane(["slots", "list", "--user", "family", "--json"])
            let slots = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]], "\(listed.stderr)")
            #expect(Set(slots.compactMap { $0["deviceID"] as? String }) == [devices[0].id, devices[1].id])
            #expect(slots.allSatisfy { $0["assetID"] as? String == "clip" })

            let refused = try CLIRunner.run(["play", "clip", "--data-dir", devices[2].directory, "--exec", "true"])
            #expect(refused.status == 1 && refused.stderr.contains("no stream slot") && refused.stderr.contains("as many streams"), "\(refused.stderr)")
            #expect(refused.stdout.isEmpty, "no session URL for a refused stream")

            // A player stopped: its slot is released at once.
            phone.stop()
            let third = try play(2)
            defer { third.stop() }
            #expect(third.wait(for: "http://127.0.0.1:", seconds: 30), "the released slot is free")

            // A player that vanishes (killed: nothing released) holds its slot until its lease ends; the renewing
            // ones keep theirs past it.
            tv.vanish()
            let vanished = Date()
            // `--exec true`: were the slot free already (a loaded machine slow to start the process), the player
            // would end at once rather than hold the run.
            let early = try CLIRunner.run(["play", "clip", "--data-dir", devices[0].directory, "--exec", "true"])
            if Date().timeIntervalSince(vanished) < 2.5 {
                #expect(early.status == 1 && early.stderr.contains("no stream slot"), "the killed player's lease still holds: \(early.stderr)")
            }
            var again: LineReader?
            let deadline = Date().addingTimeInterval(20)
            while again == nil, Date() < deadline {
                Thread.sleep(forTimeInterval: 1)
                let attempt = try play(0)
                if attempt.wait(for: "http://127.0.0.1:", seconds: 10) { again = attempt } else { attempt.stop() }
            }
            defer { again?.stop() }
            #expect(again != nil, "the killed player's lease ended")
            Thread.sleep(forTimeInterval: 4)  // longer than a lease: the tablet renews its own
            let held = try world.backplane(["slots", "list", "--user", "family", "--json"])
            let holders = try #require(try JSONSerialization.jsonObject(with: Data(held.stdout.utf8)) as? [[String: Any]])
            #expect(Set(holders.compactMap { $0["deviceID"] as? String }) == [devices[0].id, devices[2].id], "\(held.stdout)")
        }
    }
}
