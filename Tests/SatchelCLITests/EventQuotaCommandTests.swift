import Foundation
import Logging
import SatchelAgent
import SatchelBackplane
import SatchelTestSupport
import Testing

/// One device cannot flood the history: `serve --device-events-per-hour` bounds each device's events, a batch past
/// the budget is answered 429 with Retry-After, and the device keeps those events to send again later.
@Suite struct EventQuotaCommandTests {
    @Test("a device past its budget of events (500 an hour here) is refused with 429 and the wait; the 500 sent first are kept, the rest stay in the device's outbox; another device is not held")
    func budget() async throws {
        let world = try await BackplaneCommandTests.World("event-quota", serveArguments: ["--device-events-per-hour", "500"])
        defer { world.server.stop() }
        let (phone, tablet) = try await TestMedia.offloaded { (try world.device("phone"), try world.device("tablet")) }
        let agent = try await Agent(dataDirectory: phone.directory, logger: Logger(label: "test"))
        let other = try await Agent(dataDirectory: tablet.directory, logger: Logger(label: "test"))
        do {
            for index in 0..<600 { try await agent.activity.record(.playStart, asset: "movie-\(index % 7)") }
            do {
                try await agent.activity.send()
                Issue.record("600 events in a budget of 500 were all taken")
            } catch {
                #expect(error.description.contains("more events than its budget allows") && error.description.contains("send them again in"), "\(error)")
            }
            #expect(try await agent.activity.pending().count == 100, "the refused batch stays on the device")
            try await other.activity.record(.playStart, asset: "movie")
            #expect(try await other.activity.send() >= 1, "another device's budget is its own")
        } catch {
            await agent.close()
            await other.close()
            throw error
        }
        await agent.close()
        await other.close()
        try await TestMedia.offloaded {
            let listed = try world.backplane(["events", "list", "--device", phone.id, "--all"])
            #expect(listed.status == 0, "\(listed.stderr)")
            #expect(listed.stdout.split(separator: "\n").count >= 500 && listed.stdout.split(separator: "\n").count < 600, "\(listed.stdout.split(separator: "\n").count) kept")
            let refused = try CLIRunner.run(["serve", "--device-events-per-hour", "100", "--insecure-no-entitlement"])
            #expect(refused.status != 0 && refused.stderr.contains("--device-events-per-hour is 500"), "\(refused.stderr)")
        }
    }
}
