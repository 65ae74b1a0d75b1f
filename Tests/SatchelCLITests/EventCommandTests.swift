import Foundation
import SatchelTestSupport
import Testing

/// Device events end to end (seed 003 "Event Logging"; issue "Subscriptions, events and stream slots" §2): a real
/// `satchel serve`, a real device downloading, playing and licensing through the command line, the operator reading
/// and counting what it reported.
@Suite(.serialized) struct EventCommandTests {
    /// `backplane events counts ARGUMENTS --json` as key → count.
    static func counts(_ world: BackplaneCommandTests.World, _ arguments: [String]) throws -> [String: Int] {
        let result = try world.backplane(["events", "counts"] + arguments + ["--json"])
        let array = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]], "\(result.stderr)")
        var table: [String: Int] = [:]
        for row in array {
            guard let count = row["count"] as? Int, let key = row.first(where: { $0.key != "count" })?.value as? String else { continue }
            table[key] = count
        }
        return table
    }

    /// `backplane events list ARGUMENTS --json`.
    static func list(_ world: BackplaneCommandTests.World, _ arguments: [String]) throws -> [[String: Any]] {
        let result = try world.backplane(["events", "list"] + arguments + ["--json"])
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]], "\(result.stderr)")
    }

    @Test("three completed downloads are counted by events counts (queued, started, completed each three, by asset one each); a play and a license are reported; events made while the backplane is down arrive once after it is back; a kind turned off is not reported, a mandatory one cannot be turned off",
          .timeLimit(.minutes(5)))
    func reported() async throws {
        let world = try await BackplaneCommandTests.World("events")
        defer { world.server.stop() }
        let origin = try await BackplaneCommandTests.origin(world)
        defer { origin.stop() }
        try await TestMedia.offloaded {
            let device = try world.device("phone")
            for id in ["one", "two", "three"] {
                #expect(try CLIRunner.run(["download", "add", origin.url("clip.mp4"), "--id", id, "--data-dir", device.directory]).status == 0)
            }
            let run = try CLIRunner.run(["download", "run", "--data-dir", device.directory])
            #expect(run.status == 0, "\(run.stderr)")
            let byKind = try Self.counts(world, [])
            #expect(byKind["download-completed"] == 3 && byKind["download-queued"] == 3 && byKind["download-started"] == 3, "\(byKind)")
            #expect(try Self.counts(world, ["--by", "asset", "--kind", "download-completed"]) == ["one": 1, "two": 1, "three": 1])
            #expect(try Self.counts(world, ["--by", "user"])["user-42"] == 9)
            #expect(try Self.list(world, ["--kind", "download-completed", "--user", "user-42"]).allSatisfy { $0["deviceID"] as? String == device.id })

            // A play (start, and stop with the seconds it played) and a license; sent at the next sync.
            let player = try LineReader(["play", "one", "--data-dir", device.directory])
            #expect(player.wait(for: "http://127.0.0.1:", seconds: 30))
            Thread.sleep(forTimeInterval: 1.2)
            player.stop()
            let token = try world.server.token()
            #expect(try CLIRunner.run(["license", "acquire", "clip", "--token", token, "--data-dir", device.directory]).status == 0)
            #expect(try CLIRunner.run(["agent", "sync", "--data-dir", device.directory]).status == 0)
            let stops = try Self.list(world, ["--kind", "play-stop"])
            #expect(stops.count == 1 && (stops.first?["event"] as? [String: Any])?["assetID"] as? String == "one", "\(stops)")
            #expect(((stops.first?["event"] as? [String: Any])?["seconds"] as? Double ?? 0) >= 1, "\(stops)")
            #expect(try Self.counts(world, [])["play-start"] == 1 && Self.counts(world, [])["license-acquired"] == 1)

            // The backplane down: the removal is kept on the device, and arrives once when it is back.
            world.server.stop()
            #expect(try CLIRunner.run(["download", "remove", "one", "--data-dir", device.directory]).status == 0)
            #expect(try CLIRunner.run(["agent", "sync", "--data-dir", device.directory]).status != 0, "the backplane is down")
        }
        try await world.server.start()
        try await TestMedia.offloaded {
            let device = world.server.directory.appendingPathComponent("phone").path
            for _ in 0..<2 { #expect(try CLIRunner.run(["agent", "sync", "--data-dir", device]).status == 0) }
            let deleted = try Self.list(world, ["--kind", "deleted"])
            #expect(deleted.count == 1 && (deleted.first?["event"] as? [String: Any])?["assetID"] as? String == "one", "once: \(deleted)")

            // Turned off: the device learns it at its sync and reports no removal; a mandatory kind stays on.
            let refused = try world.backplane(["settings", "set", "--disabled-events", "deleted,download-completed"])
            #expect(refused.status != 0 && refused.stderr.contains("download-completed cannot be turned off"), "\(refused.stderr)")
            #expect(try world.backplane(["settings", "set", "--disabled-events", "deleted"]).status == 0)
            #expect(try CLIRunner.run(["agent", "sync", "--data-dir", device]).status == 0)
            #expect(try CLIRunner.run(["download", "remove", "two", "--data-dir", device]).status == 0)
            #expect(try CLIRunner.run(["agent", "sync", "--data-dir", device]).status == 0)
            #expect(try Self.counts(world, [])["deleted"] == 1, "a kind turned off is not reported")
        }
    }
}
