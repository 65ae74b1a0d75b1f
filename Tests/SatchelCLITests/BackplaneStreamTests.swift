import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SatchelBytes
import SatchelRights
import SatchelTestSupport
import Testing

/// `GET /backplane/stream` and `GET /backplane/sync` as a device's HTTP client sees them (curl, requests signed here).
@Suite(.serialized) struct BackplaneStreamTests {
    /// A device registered over HTTP: its key and certificate.
    struct Device {
        let key = P256.Signing.PrivateKey()
        var id = "", certificate = ""

        /// A fresh signed request for `route` (a new nonce, now).
        func signed(_ route: String) throws -> String {
            try SignedToken.sign(DeviceRequestClaims(certificate: certificate, nonce: Hex.encode(SecureRandom.bytes(16)), time: Date(), route: route), key: key)
        }
    }

    @Test("event streams have their own budget: ten streams of one device (each newer one ends the older) and four of other devices leave license requests served on a cap of 8 connections; a stream past --max-streams is 503 too-many-streams")
    func streamBudget() async throws {
        let world = try await BackplaneCommandTests.World("stream-budget", serveArguments: ["--max-connections", "8", "--max-streams", "4"])
        defer { world.server.stop() }
        let port = try #require(URL(string: world.server.url)?.port)
        var registered: [Device] = []
        for _ in 0..<5 { registered.append(try await Self.register(world)) }
        let devices = registered
        try await TestMedia.offloaded {
            /// A stream opened for `device`: the connection, and the start of its answer.
            func open(_ device: Device) throws -> (RawConnection, String) {
                let connection = try RawConnection(port: port, timeout: 2)
                connection.send("GET /backplane/stream HTTP/1.1\r\nHost: a\r\nSatchel-Device-Request: \(try device.signed("GET /backplane/stream"))\r\n\r\n")
                return (connection, connection.read(upTo: 12).text)  // the status line's start: a stream's answer never ends
            }
            var held: [RawConnection] = []
            for _ in 0..<10 {
                let (connection, answer) = try open(devices[0])
                #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer.prefix(60))")
                held.append(connection)
            }
            #expect(held.dropLast().allSatisfy { $0.read(upTo: 1 << 20).closed }, "each older stream of the device was ended and closed")
            for device in devices[1...3] {
                let (connection, answer) = try open(device)
                #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer.prefix(60))")
                held.append(connection)
            }
            let (refusal, status) = try open(devices[4])
            let refused = status + refusal.readResponse()
            #expect(refused.hasPrefix("HTTP/1.1 503") && refused.contains("too-many-streams"), "\(refused.prefix(300))")
            for _ in 0..<3 {
                let keys = try RawConnection(port: port)
                keys.send("GET /licenses/keys HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
                #expect(keys.readResponse().hasPrefix("HTTP/1.1 200"), "license requests still served")
            }
            withExtendedLifetime(held) {}
        }
    }

    static func register(_ world: BackplaneCommandTests.World) async throws -> Device {
        var device = Device()
        let answer = try await BackplaneNodesTests.post(world.server.url + "/devices", RegistrationRequest(publicKey: PublicKeyJWK(device.key.publicKey),
                                                                                                          name: "curl", externalID: nil),
                                                        bearer: try world.server.token())
        let registration = try JSONCoding.decoder().decode(RegistrationAnswer.self, from: answer.body)
        device.id = registration.deviceID
        device.certificate = registration.certificate
        return device
    }

    /// `GET path` with the device's signed request: the status and the body.
    static func get(_ world: BackplaneCommandTests.World, _ path: String, _ device: Device) async throws -> (status: Int, body: [String: Any]) {
        var request = URLRequest(url: try #require(URL(string: world.server.url + path)))
        request.setValue(try device.signed(DeviceRequestClaims.route(method: "GET", path: path)), forHTTPHeaderField: "Satchel-Device-Request")
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:])
    }

    @Test("the stream: the settings first, then only the commands after Last-Event-ID, a command issued while connected at once, heartbeat comments while idle; a device that took its kill is refused (403 device-killed), before that its sync still gives the kill",
          .timeLimit(.minutes(3)))
    func stream() async throws {
        let curl = URL(fileURLWithPath: "/usr/bin/curl")
        try TestMedia.require("curl")
        let world = try await BackplaneCommandTests.World("backplane-stream", serveArguments: ["--backplane-heartbeat", "0.5"])
        defer { world.server.stop() }
        let device = try await Self.register(world)
        try await TestMedia.offloaded { () throws -> Void in
            for arguments in [["delete-asset", device.id, "a"], ["delete-asset", device.id, "b"], ["wipe", device.id]] {
                #expect(try world.backplane(["devices"] + arguments).status == 0)
            }
        }
        let stream = try LineReader(["-sN", "-H", "Satchel-Device-Request: \(try device.signed("GET /backplane/stream"))", "-H", "Last-Event-ID: 1", world.server.url + "/backplane/stream"],
                                    program: curl)
        defer { stream.stop() }
        try await TestMedia.offloaded { () throws -> Void in
            #expect(stream.wait(for: "id: 3", seconds: 10), "\(stream.lines)")
            let lines = stream.lines
            #expect(lines.first == "event: settings", "the settings first: \(lines)")
            #expect(lines.contains("id: 2") && !lines.contains("id: 1"), "after the cursor only: \(lines)")
            #expect(lines.contains { $0.hasPrefix("data: ") && $0.contains("\"kind\":\"wipe\"") && $0.contains("\"sequence\":3") }, "\(lines)")
            #expect(stream.wait(for: ": heartbeat", seconds: 5), "a comment while idle: \(stream.lines)")
            #expect(try world.backplane(["devices", "delete-asset", device.id, "c"]).status == 0)
            #expect(stream.wait(for: "id: 4", seconds: 3), "issued while connected: \(stream.lines)")
        }
        stream.stop()

        let kill = try await TestMedia.offloaded { try world.backplane(["devices", "kill", device.id, "--json"]) }
        let killID = try #require((try JSONSerialization.jsonObject(with: Data(kill.stdout.utf8)) as? [String: Any])?["id"] as? String, "\(kill.stdout)")
        let beforeAck = try await Self.get(world, "/backplane/sync?after=4", device)
        #expect(beforeAck.status == 200 && (beforeAck.body["commands"] as? [[String: Any]])?.first?["kind"] as? String == "kill", "\(beforeAck.body)")
        #expect(beforeAck.body["state"] as? String == "killed")
        // A fresh request signed for another route (or for none) acknowledges nothing.
        for route in ["POST /backplane/permissions", "POST /backplane/commands/other/ack", ""] {
            let forged = try await BackplaneNodesTests.post(world.server.url + "/backplane/commands/\(killID)/ack", DeviceRequestEnvelope(request: try device.signed(route)))
            #expect(forged.status == 403 && String(decoding: forged.body, as: UTF8.self).contains("was signed for"), "\(route): \(forged.status)")
        }
        #expect(try await Self.get(world, "/backplane/sync?after=4", device).body["state"] as? String == "killed", "the kill is still to be applied")
        let acked = try await BackplaneNodesTests.post(world.server.url + "/backplane/commands/\(killID)/ack", DeviceRequestEnvelope(request: try device.signed("POST /backplane/commands/\(killID)/ack")))
        #expect(acked.status == 204)
        let after = try await Self.get(world, "/backplane/sync?after=5", device)
        #expect(after.status == 403 && (after.body["type"] as? String)?.hasSuffix("/device-killed") == true, "\(after.body)")
        let refusedStream = try await Self.get(world, "/backplane/stream", device)
        #expect(refusedStream.status == 403, "no stream for a killed device")
        let replay = try await Self.get(world, "/backplane/sync?after=x", device)
        #expect(replay.status == 400, "a cursor that is not a number: \(replay.body)")
    }
}
