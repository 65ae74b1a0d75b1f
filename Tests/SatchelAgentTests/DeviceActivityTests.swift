import Foundation
import Logging
@testable import SatchelAgent
import SatchelBackplane
import Testing

/// The device's events kept on disk (seed 003 "Event Logging"): none lost, whatever records at once.
@Suite("Device activity: the events' outbox")
struct DeviceActivityTests {
    @Test("forty events recorded at once on a fresh agent (the engine's and a sync's, racing to open the outbox) are all kept, once")
    func concurrentFirstRecords() async throws {
        let directory = try DeviceStoreTests.directory("activity")
        let agent = try await Agent(dataDirectory: directory, logger: Logger(label: "test"))
        let kept = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<40 {
                group.addTask { try await agent.activity.record(index.isMultiple(of: 2) ? .downloadQueued : .subscriptionAdded, asset: "a\(index)") }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(kept.allSatisfy { $0 } && kept.count == 40)
        let pending = try await agent.activity.pending()
        #expect(Set(pending.compactMap(\.assetID)) == Set((0..<40).map { "a\($0)" }) && pending.count == 40)
        await agent.close()
    }
}
