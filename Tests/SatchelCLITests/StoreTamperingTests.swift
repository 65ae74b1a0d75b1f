import Crypto
import Foundation
import SatchelBytes
import SatchelRights
import SatchelPackager
import SatchelTestSupport
import Testing

/// The device's owner attacks its own store (the attacks that revived licenses before): the rows' rights and dates
/// edited, the sealed state edited or deleted, the store copied back from before a release, the whole data
/// directory copied back; and another user of the machine reads the data directory. Edits change nothing, a
/// sealed state that does not open or is older than its anchor refuses every license until `license sync`
/// restores what the server vouches for, and the server's records revoke a released license brought back.
@Suite(.serialized) struct StoreTamperingTests {
    typealias Server = AgentCommandTests.Server

    static func satchel(_ arguments: [String], faketime: String? = nil) throws -> CLIRunner.Result {
        try AgentCommandTests.satchel(arguments, faketime: faketime)
    }

    /// Runs SQL on a SQLite file with Python's sqlite3 (an independent writer, as an attacker would use).
    static func sql(_ database: String, _ statement: String) throws {
        let script = "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(sys.argv[2]); c.commit(); c.close()"
        let result = try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script, database, statement])
        #expect(result.status == 0, "\(result.stderr)")
    }

    static func status(_ asset: String, _ device: String, faketime: String? = nil) throws -> String? {
        try AgentCommandTests.json(try satchel(["rights", asset, "--data-dir", device, "--json"], faketime: faketime).stdout)["status"] as? String
    }

    /// A registered device with licenses for "movie" (a 1-hour rental) and "clip" (no dates).
    static func device(_ server: Server, _ name: String) throws -> (device: String, token: String) {
        let device = server.directory.appendingPathComponent(name).path
        let token = try server.token()
        #expect(try satchel(["agent", "register", "--server", server.url, "--token", token, "--data-dir", device]).status == 0)
        for asset in ["movie", "clip"] {
            let acquired = try satchel(["license", "acquire", asset, "--token", token, "--data-dir", device, "--persistent"])
            #expect(acquired.status == 0, "\(acquired.stderr)")
        }
        return (device, token)
    }

    @Test("editing a license's stored rights and dates changes nothing: an expired rental stays expired, its keys stay shut")
    func editedRows() async throws {
        let server = try await Server("tamper-rows")
        try await server.start()
        defer { server.stop() }
        try await TestMedia.offloaded {
            let (device, _) = try Self.device(server, "device")
            #expect(try Self.status("movie", device, faketime: "+2h") == "expired")
            let store = device + "/agent.sqlite"
            try Self.sql(store, #"UPDATE agent_licenses SET rights = '{"persistent":true,"output":{"hdcp":"none","airPlay":true,"externalDisplay":true,"analog":true}}'"#)
            try Self.sql(store, "UPDATE agent_licenses SET acquired_at = '2100-01-01 00:00:00', first_use = NULL, asset_id = 'movie'")
            #expect(try Self.status("movie", device, faketime: "+2h") == "expired", "the signed license says 1 hour")
            let used = try Self.satchel(["license", "use", "movie", "--data-dir", device], faketime: "+2h")
            #expect(used.status != 0 && used.stderr.contains("expired"), "\(used.stderr)")
            #expect(try Self.status("clip", device) == "valid", "and the edit moved no license to another asset")
        }
    }

    @Test("device.json edited (another server, another signing key: the trust anchor a fake server needs) is not trusted: rights, use, acquire and list refuse with registration-tampered; registering again restores the device and its licenses")
    func editedRegistration() async throws {
        let server = try await Server("tamper-registration")
        try await server.start()
        defer { server.stop() }
        try await TestMedia.offloaded {
            let (device, token) = try Self.device(server, "device")
            let file = URL(fileURLWithPath: device + "/device.json")
            let original = try Data(contentsOf: file)
            var document = try #require(try JSONSerialization.jsonObject(with: original) as? [String: Any])
            var registration = try #require(document["registration"] as? [String: Any], "device.json holds the sealed registration")
            var keys = try #require((registration["serverKeys"] as? [String: Any])?["keys"] as? [[String: Any]])
            let fake = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(PublicKeyJWK(P256.Signing.PrivateKey().publicKey))) as? [String: Any]
            keys[0]["x"] = fake?["x"]
            keys[0]["y"] = fake?["y"]
            registration["serverKeys"] = ["keys": keys]
            registration["server"] = "http://127.0.0.1:1"
            document["registration"] = registration
            try JSONSerialization.data(withJSONObject: document).write(to: file)
            for arguments in [["rights", "clip"], ["license", "use", "clip"], ["license", "list"], ["license", "acquire", "clip", "--token", token]] {
                let refused = try Self.satchel(arguments + ["--data-dir", device])
                #expect(refused.status != 0 && refused.stderr.contains("registration was changed outside Satchel") && refused.stderr.contains("register the device again"),
                        "\(arguments): \(refused.stderr)")
            }
            // The seal stripped is no better.
            try JSONSerialization.data(withJSONObject: registration).write(to: file)
            #expect(try Self.satchel(["rights", "clip", "--data-dir", device]).stderr.contains("registration was changed outside Satchel"))
            #expect(try Self.satchel(["agent", "register", "--server", server.url, "--token", token, "--data-dir", device]).status == 0)
            #expect(try Self.status("clip", device) == "valid", "registered again with the real server: its licenses verify")
        }
    }

    @Test("the sealed state edited or deleted refuses every license (store-tampered); an online sync restores what the server vouches for")
    func sealedStateEdited() async throws {
        let server = try await Server("tamper-state")
        try await server.start()
        defer { server.stop() }
        try await TestMedia.offloaded {
            let (device, _) = try Self.device(server, "device")
            let store = device + "/agent.sqlite"
            // One character of the sealed value changed.
            try Self.sql(store, "UPDATE agent_state SET value = CASE WHEN substr(value, 20, 1) = 'A' THEN substr(value, 1, 19) || 'B' || substr(value, 21) ELSE substr(value, 1, 19) || 'A' || substr(value, 21) END WHERE name = 'device-state'")
            for asset in ["clip", "movie"] {
                let refused = try Self.satchel(["rights", asset, "--data-dir", device])
                #expect(refused.status != 0 && refused.stderr.contains("changed outside Satchel") && refused.stderr.contains("does not open"), "\(refused.stderr)")
            }
            #expect(try Self.satchel(["license", "use", "clip", "--data-dir", device]).status != 0)
            let restored = try Self.satchel(["license", "sync", "--data-dir", device])
            #expect(restored.status == 0 && restored.stdout.contains("restored from the license server's records"), "\(restored.stdout) \(restored.stderr)")
            #expect(try Self.status("clip", device) == "valid" && Self.status("movie", device) == "valid")

            // The sealed state deleted (the secure clock with it): the same.
            try Self.sql(store, "DELETE FROM agent_state")
            let gone = try Self.satchel(["license", "use", "clip", "--data-dir", device])
            #expect(gone.status != 0 && gone.stderr.contains("sealed state is missing"), "\(gone.stderr)")
            // Its anchor deleted as well, with the store emptied of its state: the licenses are not vouched for.
            try FileManager.default.removeItem(atPath: device + "/store-anchor")
            let unvouched = try Self.satchel(["rights", "clip", "--data-dir", device, "--json"])
            #expect(try AgentCommandTests.json(unvouched.stdout)["status"] as? String == "no-rights", "\(unvouched.stdout) \(unvouched.stderr)")
            #expect(try Self.satchel(["license", "sync", "--data-dir", device]).status == 0)
            #expect(try Self.status("clip", device) == "valid")
        }
    }

    @Test("a store copied back from before a release is refused (older than its anchor); the next sync removes the released license and restores the others")
    func rolledBackStore() async throws {
        let server = try await Server("tamper-rollback")
        try await server.start()
        defer { server.stop() }
        try await TestMedia.offloaded {
            let (device, _) = try Self.device(server, "device")
            let copy = server.directory.appendingPathComponent("copy").path
            try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
            let files = try FileManager.default.contentsOfDirectory(atPath: device).filter { $0.hasPrefix("agent.sqlite") }
            for file in files { try FileManager.default.copyItem(atPath: device + "/" + file, toPath: copy + "/" + file) }
            let released = try Self.satchel(["license", "release", "clip", "--data-dir", device])
            #expect(released.status == 0 && released.stdout.contains("license released"), "\(released.stderr)")
            for file in try FileManager.default.contentsOfDirectory(atPath: device).filter({ $0.hasPrefix("agent.sqlite") }) {
                try FileManager.default.removeItem(atPath: device + "/" + file)
            }
            for file in files { try FileManager.default.copyItem(atPath: copy + "/" + file, toPath: device + "/" + file) }
            let refused = try Self.satchel(["license", "use", "clip", "--data-dir", device])
            #expect(refused.status != 0 && refused.stderr.contains("copied back from an earlier time"), "\(refused.stderr)")
            let synced = try Self.satchel(["license", "sync", "--data-dir", device])
            #expect(synced.status == 0 && synced.stdout.contains("removed (released on the server) clip"), "\(synced.stdout) \(synced.stderr)")
            #expect(synced.stderr.contains("license-revoked: clip"), "\(synced.stderr)")
            #expect(try Self.status("clip", device) == "no-rights" && Self.status("movie", device) == "valid")
        }
    }

    @Test("the whole data directory copied back, anchor included, is beyond what software alone can tell offline; the next sync revokes the released license")
    func wholeDirectoryCopied() async throws {
        let server = try await Server("tamper-copy")
        try await server.start()
        defer { server.stop() }
        try await TestMedia.offloaded {
            let (device, _) = try Self.device(server, "device")
            let copy = server.directory.appendingPathComponent("device-copy").path
            try FileManager.default.copyItem(atPath: device, toPath: copy)
            #expect(try Self.satchel(["license", "release", "clip", "--data-dir", device]).status == 0)
            try FileManager.default.removeItem(atPath: device)
            try FileManager.default.moveItem(atPath: copy, toPath: device)
            #expect(try Self.satchel(["license", "use", "clip", "--data-dir", device]).status == 0, "offline, the copy plays (README says so)")
            let synced = try Self.satchel(["license", "sync", "--data-dir", device])
            #expect(synced.status == 0 && synced.stdout.contains("removed (released on the server) clip"), "\(synced.stdout) \(synced.stderr)")
            #expect(try Self.satchel(["license", "use", "clip", "--data-dir", device]).status != 0)
        }
    }

    @Test("another user reads nothing of a data directory: folders 0700 and files 0600 (earlier ones tightened on open); tokens and header values are sealed in downloads.sqlite")
    func ownerOnly() async throws {
        let server = try await Server("tamper-modes")
        try await server.start()
        defer { server.stop() }
        let site = server.directory.appendingPathComponent("site")
        let input = try await TestMedia.offloaded { try TestMedia.make("tamper-modes", seconds: 2) }
        try await TestMedia.offloaded {
            _ = try Packager(options: PackageOptions(inputs: [input.path], output: site.appendingPathComponent("movie").path, format: .hlsTS,
                                                     scheme: .clear, segmentDuration: 1)).run()
        }
        let origin = try await TestOrigin.start(root: site)
        defer { origin.stop() }
        try await TestMedia.offloaded {
            let data = server.directory.appendingPathComponent("data").path
            let token = try server.token()
            #expect(try Self.satchel(["agent", "register", "--server", server.url, "--token", token, "--data-dir", data]).status == 0)
            let headerValue = "Bearer header-secret-\(UUID().uuidString)"
            let added = try Self.satchel(["download", "add", origin.url("movie/master.m3u8"), "--data-dir", data, "--id", "movie", "--license",
                                          "--token", token, "--header", "Authorization: \(headerValue)"])
            #expect(added.status == 0, "\(added.stderr)")
            #expect(try Self.satchel(["download", "run", "--data-dir", data]).status == 0)
            for file in try FileManager.default.contentsOfDirectory(atPath: data) where file.hasPrefix("downloads.sqlite") {
                let index = try Data(contentsOf: URL(fileURLWithPath: data + "/" + file))
                for secret in [token, headerValue] { #expect(index.range(of: Data(secret.utf8)) == nil, "a secret in the clear in \(file)") }
            }
            func mode(_ path: String) throws -> Int { try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int ?? -1 }
            #expect(try mode(data) == 0o700 && mode(data + "/assets") == 0o700 && mode(data + "/assets/movie") == 0o700)
            for file in ["agent.sqlite", "downloads.sqlite", "device-key.pem", "store-anchor", "device.json"] { #expect(try mode(data + "/" + file) == 0o600, "\(file)") }
            let segments = try FileManager.default.subpathsOfDirectory(atPath: data + "/assets/movie").filter { $0.hasSuffix(".ts") }
            #expect(!segments.isEmpty && segments.allSatisfy { (try? mode(data + "/assets/movie/" + $0)) == 0o600 })
            // Another user (nobody) reads nothing, not even the list of names.
            for path in [data + "/downloads.sqlite", data + "/agent.sqlite"] {
                let read = try ProcessRunner.run(URL(fileURLWithPath: "/usr/sbin/runuser"), ["-u", "nobody", "--", "cat", path])
                #expect(read.status != 0 && read.stdout.isEmpty, "nobody read \(path)")
            }
            // A folder and a database an earlier version left open to all are tightened when opened.
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: data)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: data + "/downloads.sqlite")
            #expect(try Self.satchel(["download", "list", "--data-dir", data]).status == 0)
            #expect(try mode(data) == 0o700 && mode(data + "/downloads.sqlite") == 0o600)
            // The sealed token still works: the engine's license step renews and releases with it.
            #expect(try Self.satchel(["download", "remove", "movie", "--data-dir", data]).status == 0)
            #expect(try Self.satchel(["licenses", "--data-dir", server.data]).stdout.contains("\tmovie\treleased"))
        }
    }
}
