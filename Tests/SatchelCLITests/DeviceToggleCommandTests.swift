import Foundation
@testable import SatchelAgent
import SatchelBackplane
import SatchelTestSupport
import Testing

/// Seed 003's backplane-enforced toggle asked for by the device itself ("You can request a change to this flag by
/// calling the following method. The device needs to be online": `updateDownloadEnabled:onComplete:`), and the
/// backplane's notices the seed lists (`kBackplaneDeviceSaveResultNotification`, `kBackplaneLogsSentNotification`,
/// `kBackplaneDidUnregisterDeviceNotification`, `kBackplaneInvalidCredentialsNotification`).
@Suite(.serialized) struct DeviceToggleCommandTests {
    @Test("a device asks for its own download toggle: refused over its user's device limit (device-save-result says so), granted once another is off; its events sent are logs-sent; a device the server no longer knows hears unregistered")
    func ownToggle() async throws {
        let world = try await BackplaneCommandTests.World("backplane-toggle")
        defer { world.server.stop() }
        let secondID = try await TestMedia.offloaded { () throws -> String in
            #expect(try world.backplane(["limits", "set", "--max-devices", "1"]).status == 0)
            let first = try world.device("first")
            let second = try world.device("second")
            #expect(second.stderr.contains("device-limit-reached"), "\(second.stderr)")

            let refused = try CLIRunner.run(["agent", "downloads", "on", "--data-dir", second.directory])
            #expect(refused.status != 0 && refused.stderr.contains("device-limit-reached"), "\(refused.stderr)")
            #expect(refused.stderr.contains("satchel: notice: device-save-result: downloads not turned on"), "\(refused.stderr)")
            #expect(try world.devices()[second.id]?["downloadEnabled"] as? Bool == false)

            let off = try CLIRunner.run(["agent", "downloads", "off", "--data-dir", first.directory])
            #expect(off.status == 0 && off.stdout == "downloads off\n" && off.stderr.contains("satchel: notice: device-save-result: downloads off"), "\(off.stdout) \(off.stderr)")
            let on = try CLIRunner.run(["agent", "downloads", "on", "--data-dir", second.directory])
            #expect(on.status == 0 && on.stdout == "downloads on\n" && on.stderr.contains("satchel: notice: device-save-result: downloads on"), "\(on.stdout) \(on.stderr)")
            let devices = try world.devices()
            #expect(devices[first.id]?["downloadEnabled"] as? Bool == false && devices[second.id]?["downloadEnabled"] as? Bool == true)
            let bad = try CLIRunner.run(["agent", "downloads", "maybe", "--data-dir", second.directory])
            #expect(bad.status != 0 && bad.stderr.contains("on") && bad.stderr.contains("off"), "\(bad.stderr)")

            // The sync applies the toggle's command and sends its events: the logs-sent notice.
            let synced = try CLIRunner.run(["agent", "sync", "--data-dir", second.directory])
            #expect(synced.status == 0 && synced.stdout.contains("downloads enabled"), "\(synced.stdout) \(synced.stderr)")
            #expect(synced.stderr.contains("satchel: notice: logs-sent: "), "\(synced.stderr)")
            return second.id
        }
        // The operator removes the second device's registration from the server's store: its next call hears
        // "unregistered" (register again), not a bare refusal.
        world.server.stop()
        _ = try await TestMedia.offloaded { () throws -> String in
            try TestMedia.run("python3", ["-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('DELETE FROM satchel_devices WHERE device_id = ?', (sys.argv[2],)); c.commit()",
                                          URL(fileURLWithPath: world.server.data).appendingPathComponent("satchel.sqlite").path, secondID])
        }
        try await world.server.start()
        try await TestMedia.offloaded {
            let second = world.server.directory.appendingPathComponent("second").path
            let gone = try CLIRunner.run(["agent", "downloads", "on", "--data-dir", second])
            #expect(gone.status != 0 && gone.stderr.contains("satchel: notice: unregistered: ") && gone.stderr.contains("register it again"), "\(gone.stderr)")
        }
    }

    @Test("a refusal of the device's credentials is the invalid-credentials notice; an unknown device is unregistered; other failures raise none")
    func credentialNotices() {
        #expect(AgentRequests.credentialsNotice(.server(type: "device-unregistered", status: 403, detail: "")) == .unregistered)
        #expect(AgentRequests.credentialsNotice(.server(type: "not-entitled", status: 403, detail: "the request is not signed by a device this server certified")) == .invalidCredentials)
        #expect(AgentRequests.credentialsNotice(.server(type: "invalid-entitlement", status: 401, detail: "")) == .invalidCredentials)
        #expect(AgentRequests.credentialsNotice(.server(type: "http-401", status: 401, detail: "")) == .invalidCredentials)
        #expect(AgentRequests.credentialsNotice(.server(type: "device-limit-reached", status: 409, detail: "")) == nil)
        #expect(AgentRequests.credentialsNotice(.network("refused")) == nil)
    }
}
