import Foundation
import SatchelBytes
import SatchelTestSupport
import Testing
@testable import SatchelBackplane

/// Commands to a device: their JSON form, and the device's ledger that applies them in the order issued, each once.
@Suite("Backplane commands")
struct BackplaneCommandTests {
    static func command(_ sequence: Int64, _ action: BackplaneCommand.Action = .wipe) -> BackplaneCommand {
        BackplaneCommand(id: "c\(sequence)", sequence: sequence, issued: Date(timeIntervalSince1970: 1_800_000_000 + Double(sequence)), action: action)
    }

    @Test("each kind round-trips through its JSON form, named by kind; an unknown kind, a kind without its member, or a sequence below 1 is refused")
    func json() throws {
        let actions: [BackplaneCommand.Action] = [.deleteAsset("movie"), .wipe, .kill, .downloadEnabled(false),
                                                  .settings(BackplaneSettings(expiryAfterDownload: 60, downloadOverCellular: true))]
        for (index, action) in actions.enumerated() {
            let command = Self.command(Int64(index) + 1, action)
            let text = try JSONCoding.encoder().encode(command)
            #expect(try JSONCoding.decoder().decode(BackplaneCommand.self, from: text) == command)
            let object = try JSONCoding.decoder().decode([String: JSONValue].self, from: text)
            #expect(object["kind"] == .string(action.kind))
        }
        let deleted = String(decoding: try JSONCoding.encoder().encode(Self.command(1, .deleteAsset("movie"))), as: UTF8.self)
        #expect(deleted == #"{"asset":"movie","id":"c1","issued":"2027-01-15T08:00:01Z","kind":"delete-asset","sequence":1}"#)
        for bad in [#"{"id":"x","sequence":1,"issued":"2027-01-15T08:00:01Z","kind":"format-disk"}"#,
                    #"{"id":"x","sequence":1,"issued":"2027-01-15T08:00:01Z","kind":"delete-asset"}"#,
                    #"{"id":"x","sequence":0,"issued":"2027-01-15T08:00:01Z","kind":"wipe"}"#] {
            #expect(throws: DecodingError.self) { try JSONCoding.decoder().decode(BackplaneCommand.self, from: Data(bad.utf8)) }
        }
    }

    @Test("the ledger gives the next commands in order, stops at a gap, leaves out repeats and those applied; only the next in order moves it")
    func ledger() {
        var ledger = CommandLedger()
        let batch = [Self.command(3), Self.command(1), Self.command(2), Self.command(2), Self.command(5)]
        #expect(ledger.due(batch).map(\.sequence) == [1, 2, 3], "4 is missing: 5 waits")
        let early = ledger.applied(Self.command(2))
        #expect(!early, "2 before 1 is refused")
        for command in ledger.due(batch) {
            let moved = ledger.applied(command)
            #expect(moved)
        }
        #expect(ledger.lastApplied == 3)
        #expect(ledger.due(batch).isEmpty, "delivered again: nothing applied twice")
        let again = ledger.applied(Self.command(3))
        #expect(!again)
        #expect(ledger.due(batch + [Self.command(4)]).map(\.sequence) == [4, 5])
        #expect(CommandLedger(lastApplied: -5).lastApplied == 0)
        var top = CommandLedger(lastApplied: .max)
        let wrapped = top.applied(Self.command(1))
        #expect(top.due([Self.command(.max)]).isEmpty && !wrapped && top.lastApplied == .max, "no wrap past the largest sequence")
    }

    @Test("permission answers have a JSON form: granted, or refused with the reason's code")
    func permissionJSON() throws {
        for answer in [DownloadPermission.granted] + PermissionRefusal.allCases.map(DownloadPermission.refused) {
            #expect(try JSONCoding.decoder().decode(DownloadPermission.self, from: JSONCoding.encoder().encode(answer)) == answer)
        }
        #expect(String(decoding: try JSONCoding.encoder().encode(DownloadPermission.refused(.deviceAssetLimit)), as: UTF8.self)
                == #"{"granted":false,"reason":"device-asset-limit"}"#)
        #expect(Set(PermissionRefusal.allCases.map(\.rawValue)).count == PermissionRefusal.allCases.count)
        #expect(Set(BackplaneNotice.allCases.map(\.rawValue)).count == BackplaneNotice.allCases.count)
    }
}

/// Server-sent events read from bytes, however they are cut (the device's side of `GET /backplane/stream`).
@Suite("Backplane: the event stream's parser")
struct EventStreamParserTests {
    static let stream = Array("""
        : heartbeat

        event: settings
        data: {"expiryAfterPlay":60}

        id: 7\r
        event: command\r
        data: {"a":1}\r
        data: {"b":2}\r
        \r
        id: 8\rdata: plain\r\r: end

        """.utf8)

    static let expected = [
        EventStreamParser.Event(id: nil, name: "settings", data: #"{"expiryAfterPlay":60}"#),
        EventStreamParser.Event(id: "7", name: "command", data: "{\"a\":1}\n{\"b\":2}"),
        EventStreamParser.Event(id: "8", name: "message", data: "plain"),
    ]

    @Test("events with ids, names and several data lines, LF, CRLF and CR line ends, comments skipped, an event without data dropped")
    func whole() {
        var parser = EventStreamParser()
        #expect(parser.feed(Self.stream) == Self.expected)
        #expect(parser.feed(Array("event: empty\n\n".utf8)).isEmpty, "no data: nothing dispatched")
        #expect(parser.feed(Array("data: x".utf8)).isEmpty, "not dispatched before its blank line")
        #expect(parser.feed(Array("\n\n".utf8)) == [EventStreamParser.Event(id: "8", name: "message", data: "x")], "the last id holds")
    }

    @Test("cut at every byte, or at random places (seeded), the same events come out", arguments: [1, 2, 3, 5, 17])
    func chunked(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var parser = EventStreamParser()
        var events: [EventStreamParser.Event] = []
        var index = 0
        while index < Self.stream.count {
            let length = seed == 1 ? 1 : Int.random(in: 1...9, using: &random)
            events += parser.feed(Self.stream[index..<min(index + length, Self.stream.count)])
            index += length
        }
        #expect(events == Self.expected)
    }

    @Test("a line longer than the limit is cut, not kept whole: memory stays bounded")
    func longLine() {
        var parser = EventStreamParser()
        let events = parser.feed(Array("data: ".utf8) + [UInt8](repeating: UInt8(ascii: "x"), count: EventStreamParser.maximumLine + 5000) + Array("\n\n".utf8))
        #expect(events.count == 1 && events[0].data.utf8.count == EventStreamParser.maximumLine - 6)
    }
}

@Suite("Backplane: the device's ledger taking up from the server")
struct LedgerSkipTests {
    @Test("a ledger lost (0) takes up from what the server says is acknowledged, and the next command is due; it never moves back")
    func skip() {
        let command = { (sequence: Int64) in BackplaneCommandTests.command(sequence) }
        var ledger = CommandLedger()
        #expect(ledger.due([command(5)]).isEmpty, "a gap: nothing due")
        ledger.skip(through: 4)
        #expect(ledger.due([command(5), command(6)]).map(\.sequence) == [5, 6])
        ledger.skip(through: 2)
        #expect(ledger.lastApplied == 4)
    }
}
