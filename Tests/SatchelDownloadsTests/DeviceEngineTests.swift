import Foundation
import SatchelAgent
import SatchelDevice
import SatchelDownloads
import SatchelTestSupport
import Testing

/// The device's engine assembled one way, and the store's door for bytes a player fetched while a file downloads.
@Suite("The device engine and partial files")
struct DeviceEngineTests {
    @Test("every registered device's downloads take the backplane's permission, then the Satchel license, then the FairPlay key — the command line's listen and sync included")
    func steps() async throws {
        let directory = try TestMedia.temporaryDirectory("device-engine").path
        let agent = try await Agent(dataDirectory: directory)
        let steps = DeviceEngine.steps(agent: agent, dataDirectory: directory, sealing: try DeviceSecretBox(dataDirectory: directory))
        #expect(steps.map { String(describing: type(of: $0)) } == ["PermissionStep", "LicenseStep", "FairPlayStep"])
        await agent.close()
    }

    @Test("bytes fetched for a player are appended to a partial download only when they continue it exactly; never to a complete file, a missing part, or another length")
    func extendPart() throws {
        let root = try TestMedia.temporaryDirectory("extend-part").path
        let store = AssetStore(root: root)
        _ = try #require(try store.folder("film", of: "film.ismv", create: true, url: "film.ismv"))
        let (file, part) = (store.path("film", "film.ismv"), store.path("film", "film.ismv") + ".part")
        #expect(try store.extendPart("film", path: "film.ismv", offset: 0, bytes: [1, 2], total: nil) == false, "no part: nothing to continue")
        try Data([1, 2, 3, 4]).write(to: URL(fileURLWithPath: part))
        #expect(try store.extendPart("film", path: "film.ismv", offset: 6, bytes: [7], total: nil) == false, "a jump ahead is not kept")
        #expect(try store.extendPart("film", path: "film.ismv", offset: 2, bytes: [3], total: nil) == false, "an overlap is not kept")
        #expect(try store.extendPart("film", path: "film.ismv", offset: 4, bytes: [5, 6], total: 10))
        #expect(try Data(contentsOf: URL(fileURLWithPath: part)) == Data([1, 2, 3, 4, 5, 6]))
        try Data([0]).write(to: URL(fileURLWithPath: file))
        #expect(try store.extendPart("film", path: "film.ismv", offset: 6, bytes: [7], total: 10) == false, "the file is complete")
        #expect(throws: DownloadFailure.self) { try store.extendPart("film", path: "../escape", offset: 0, bytes: [1], total: nil) }
    }
}
