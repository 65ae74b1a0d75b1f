import Foundation
import SatchelTestSupport
import Testing

@Suite("satchel keys")
struct KeysCommandTests {
    @Test("package --register, keys list, import, delete; the KEK file is 0600 and the key never printed")
    func keys() throws {
        let input = try TestMedia.make("cli-keys", seconds: 3)
        let dir = try TestMedia.temporaryDirectory("cli-keys")
        let data = dir.appendingPathComponent("data").path
        let key = "00112233445566778899aabbccddeeff"
        let packaged = try CLIRunner.run(["package", input.path, "--out", dir.appendingPathComponent("pkg").path, "--format", "cmaf",
                                          "--scheme", "cenc", "--key-id", "0123456789abcdef0123456789abcdef", "--key", key,
                                          "--register", "--asset-id", "film", "--data-dir", data, "--offline", "--lease-seconds", "60"])
        #expect(packaged.status == 0, "\(packaged.stderr)")
        #expect(packaged.stdout.contains("registered 1 key for asset film"))
        #expect(try FileManager.default.attributesOfItem(atPath: data + "/kek.key")[.posixPermissions] as? Int == 0o600)
        let list = try CLIRunner.run(["keys", "list", "--data-dir", data, "--json"])
        #expect(list.status == 0 && list.stdout.contains("0123456789abcdef0123456789abcdef") && !list.stdout.contains(key))
        let imported = try CLIRunner.run(["keys", "import", dir.appendingPathComponent("pkg/keys.json").path, "--asset-id", "film-2",
                                          "--data-dir", data, "--not-after", "2030-01-01"])
        #expect(imported.status == 0, "\(imported.stderr)")
        let deleted = try CLIRunner.run(["keys", "delete", "film", "--data-dir", data])
        #expect(deleted.status == 0)
        let missing = try CLIRunner.run(["keys", "delete", "film", "--data-dir", data])
        #expect(missing.status != 0 && missing.stderr.hasPrefix("satchel: error: no asset or key film"))
        let badDate = try CLIRunner.run(["keys", "import", dir.appendingPathComponent("pkg/keys.json").path, "--asset-id", "x",
                                         "--data-dir", data, "--not-after", "tomorrow"])
        #expect(badDate.status != 0 && badDate.stderr.split(separator: "\n").count == 1)
        let noJWKS = try CLIRunner.run(["serve", "--data-dir", data])
        #expect(noJWKS.status != 0 && noJWKS.stderr.contains("--jwks"))
    }
}
