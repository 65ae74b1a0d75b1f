import Foundation
import SatchelDownloads
import SatchelTestSupport
import Testing

/// Seed 003 `downloadOverCellular` (default NO: "downloads will never happen over a cellular connection"): the network
/// monitor seam, NetworkManager's answers, and the engine pausing and resuming as the network changes.
@Suite("Metered networks: the network monitor, NetworkManager's answers, the engine")
struct NetworkMonitorTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/nmcli")

    static func fixture(_ name: String) throws -> String {
        try String(contentsOf: fixtures.appendingPathComponent(name), encoding: .utf8)
    }

    @Test("real nmcli answers: a guessed or explicit 'no' is unmetered, 'yes' metered, only loopback or no NetworkManager unknown")
    func recordedAnswers() throws {
        #expect(NetworkManagerReading.networkType(try Self.fixture("guessed-no.txt")[...]) == .unmetered)
        #expect(NetworkManagerReading.networkType(try Self.fixture("metered-no.txt")[...]) == .unmetered)
        #expect(NetworkManagerReading.networkType(try Self.fixture("metered-yes.txt")[...]) == .cellular)
        #expect(NetworkManagerReading.networkType(try Self.fixture("disconnected.txt")[...]) == .unknown, "the loopback does not count")
        #expect(NetworkManagerReading.networkType(try Self.fixture("not-running.txt")[...]) == .unknown)
        let devices = NetworkManagerReading.devices(try Self.fixture("metered-yes.txt")[...])
        #expect(devices.map(\.name) == ["lo", "veth-a", "veth-b"])
        #expect(devices[1] == NetworkManagerReading.Device(name: "veth-a", type: "ethernet", state: 100, metered: "yes"))
    }

    @Test("an unmetered device wins over a metered one (Wi-Fi beside a modem); garbage and empty answers are unknown")
    func mixedAndHostile() {
        let mixed = """
            GENERAL.DEVICE:wwan0
            GENERAL.TYPE:gsm
            GENERAL.STATE:100 (connected)
            GENERAL.METERED:yes (guessed)

            GENERAL.DEVICE:wlan0
            GENERAL.TYPE:wifi
            GENERAL.STATE:100 (connected)
            GENERAL.METERED:no (guessed)
            """
        #expect(NetworkManagerReading.networkType(mixed[...]) == .unmetered)
        #expect(NetworkManagerReading.networkType(mixed.replacingOccurrences(of: "no (guessed)", with: "yes")[...]) == .cellular)
        #expect(NetworkManagerReading.networkType(mixed.replacingOccurrences(of: "100 (connected)", with: "30 (disconnected)")[...]) == .unknown)
        #expect(NetworkManagerReading.networkType(""[...]) == .unknown)
        #expect(NetworkManagerReading.networkType(String(repeating: "GENERAL.STATE:99999999999999999999\n", count: 1000)[...]) == .unknown)
        #expect(NetworkManagerReading.networkType("GENERAL.METERED:yes\nGENERAL.STATE:100\n"[...]) == .unknown, "fields before a device are ignored")
    }

    /// Seed 003: "If this value is NO, downloads will never happen over a cellular connection" — so a network the
    /// device cannot recognise counts as metered unless the app says otherwise.
    @Test("the rules: metered waits unless allowed; an unknown network counts as metered by default (metered-unknown deny), allowed only when the app says so")
    func rules() {
        let strict = QueuePolicy(rules: DownloadRules(headroom: 0))
        #expect(DownloadRules().meteredUnknown == .deny && !DownloadRules().downloadOverCellular)
        #expect(strict.networkHold(.cellular) == .networkUnavailable(.cellular))
        #expect(strict.networkHold(.none) == .networkUnavailable(.none))
        #expect(strict.networkHold(.unknown) == .networkUnavailable(.unknown))
        #expect(strict.networkHold(.unmetered) == nil)
        let allow = QueuePolicy(rules: DownloadRules(headroom: 0, meteredUnknown: .allow))
        #expect(allow.networkHold(.unknown) == nil)
        #expect(allow.networkHold(.cellular) == .networkUnavailable(.cellular))
        let deny = QueuePolicy(rules: DownloadRules(headroom: 0, meteredUnknown: .deny))
        #expect(deny.networkHold(.unknown) == .networkUnavailable(.unknown))
        #expect(deny.networkHold(.unmetered) == nil)
        let cellular = QueuePolicy(rules: DownloadRules(headroom: 0, downloadOverCellular: true, meteredUnknown: .deny))
        #expect(cellular.networkHold(.cellular) == nil && cellular.networkHold(.unknown) == nil)
        #expect(DownloadFailure.networkUnavailable(.unknown).description.contains("cannot be detected"))
    }

    @Test("an engine built without a network monitor watches the platform's own (one per process), not a network assumed unmetered")
    func systemMonitorByDefault() {
        let environment = DownloadEnvironment()
        #expect(environment.network as AnyObject === SystemNetwork.shared as AnyObject)
        #expect(!(environment.network is FixedNetwork))
        #expect(DownloadEnvironment(network: FixedNetwork(.cellular)).network.current == .cellular)
    }

    @Test("NetworkManagerMonitor asks nmcli now and again, hears a change, and gives unknown when nmcli fails, hangs or is missing")
    func monitorRunsNmcli() async throws {
        let directory = try TestMedia.temporaryDirectory("satchel-nmcli")
        defer { try? FileManager.default.removeItem(at: directory) }
        let answer = directory.appendingPathComponent("answer.txt")
        let nmcli = directory.appendingPathComponent("nmcli")
        // A stand-in for nmcli that prints the answer in place (and checks it was asked the right question).
        let script = "#!/bin/sh\n[ \"$*\" = \"\(NetworkManagerReading.arguments.joined(separator: " "))\" ] || exit 2\ncat '\(answer.path)'\n"
        try script.write(to: nmcli, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: nmcli.path)
        try Self.fixture("guessed-no.txt").write(to: answer, atomically: true, encoding: .utf8)

        // A long timeout: a loaded machine (the whole suite at once) may take seconds to start the stand-in.
        let monitor = NetworkManagerMonitor(command: nmcli.path, interval: .milliseconds(100), timeout: .seconds(60))
        defer { monitor.stop() }
        #expect(monitor.current == .unmetered, "read once at start")
        let changes = monitor.changes()
        try Self.fixture("metered-yes.txt").write(to: answer, atomically: true, encoding: .utf8)
        var iterator = changes.makeAsyncIterator()
        #expect(await iterator.next() == .cellular)
        #expect(monitor.current == .cellular)

        let failing = directory.appendingPathComponent("failing")
        try "#!/bin/sh\necho 'Error: NetworkManager is not running.' >&2\nexit 8\n".write(to: failing, atomically: true, encoding: .utf8)
        let hanging = directory.appendingPathComponent("hanging")
        try "#!/bin/sh\nexec sleep 600\n".write(to: hanging, atomically: true, encoding: .utf8)
        for file in [failing, hanging] { try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: file.path) }
        #expect(NetworkManagerMonitor.reading(command: failing.path, timeout: .seconds(60)) == .unknown, "fails: unknown, at once")
        let start = ContinuousClock.now
        #expect(NetworkManagerMonitor.reading(command: hanging.path, timeout: .milliseconds(300)) == .unknown)
        #expect(ContinuousClock.now - start < .seconds(30), "a hanging nmcli is given up on")
        #expect(NetworkManagerMonitor.reading(command: directory.appendingPathComponent("absent").path) == .unknown)
    }

    @Test("a switch to a metered network mid-download pauses it within seconds; switching back resumes it where it stopped")
    func engineFollowsTheNetwork() async throws {
        let world = try await DownloadWorld.make("metered")
        defer { world.origin.stop() }
        world.origin.setThrottle(chunk: 4096, microseconds: 25_000)  // about 160 KB/s a connection: seconds for the asset
        let network = SettableNetwork(.unmetered)
        let manager = try await world.manager(environment: DownloadEnvironment(network: network), parallelism: 2)
        let log = await EventLog(manager)
        try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "a")
        await manager.start(recheckInterval: .seconds(3600))  // only a change of network wakes it
        #expect(await log.waitForBytes())

        network.set(.cellular)
        var asset = try await manager.asset("a")
        for _ in 0..<500 where asset.state != .waiting {
            try await Task.sleep(for: .milliseconds(20))
            asset = try await manager.asset("a")
        }
        #expect(asset.state == .waiting && asset.failure == .networkUnavailable(.cellular))
        let held = world.mediaBytes("a")
        #expect(held > 0)
        try await Task.sleep(for: .milliseconds(500))
        #expect(world.mediaBytes("a") == held, "nothing downloads over the metered network")
        let eventsBefore = await log.events.count

        world.origin.setThrottle(chunk: 1 << 20, microseconds: 0)
        network.set(.unmetered)
        #expect(await log.waitUntil { $0 == .finished(assetID: "a") }, "the change of network woke the engine")
        try world.expectMediaMatchesOrigin("a")
        let resumed = await log.events.dropFirst(eventsBefore).compactMap { event -> Int64? in
            if case let .progress(progress) = event { return progress.bytes } else { return nil }
        }
        #expect((resumed.first ?? 0) >= held, "the download continues from what it had, it does not start over")
        await manager.close()
    }
}
