import Foundation
import SatchelBytes
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
