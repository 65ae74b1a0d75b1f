import Foundation
import SatchelTestSupport
import Testing

@Suite("satchel keys")
struct KeysCommandTests {
    @Test("a data directory named by one letter, relative to the working directory, is made (0700) and used (it once crashed the tool)")
    func oneLetterDataDirectory() async throws {
        try await TestMedia.offloaded {
            let input = try TestMedia.make("cli-keys", seconds: 3)
            let work = try TestMedia.temporaryDirectory("cli-one-letter")
            let binary = try #require(CLIRunner.binary, "the satchel binary was not built")
            let packaged = try ProcessRunner.run(binary, ["package", input.path, "--out", "p", "--format", "cmaf", "--scheme", "cenc", "--register",
                                                          "--data-dir", "d"], directory: work)
            #expect(packaged.status == 0 && packaged.stdout.contains("registered 1 key"), "\(packaged.stderr)")
            let mode = try FileManager.default.attributesOfItem(atPath: work.appendingPathComponent("d").path)[.posixPermissions] as? Int
            #expect(mode == 0o700)
            let listed = try ProcessRunner.run(binary, ["keys", "list", "--data-dir", "d"], directory: work)
            #expect(listed.status == 0 && listed.stdout.hasPrefix("p\t"), "\(listed.stdout) \(listed.stderr)")
        }
    }

    @Test("package --register never leaves a package whose keys are nowhere: a key store that cannot be opened (a PostgreSQL database that does not exist, a data directory that is a file) stops it before anything is written, naming the cause and what to run; keys the store refuses after packaging take the package away; \"packaged\" is said only once the keys are registered")
    func registerFailures() async throws {
        try await TestMedia.offloaded {
            let input = try TestMedia.make("cli-keys", seconds: 3)
            let dir = try TestMedia.temporaryDirectory("cli-register-failures")
            let out = dir.appendingPathComponent("pkg").path
            let missing = try CLIRunner.run(["package", input.path, "--out", out, "--format", "cmaf", "--scheme", "cenc", "--register",
                                             "--database-url", "postgres://satchel:satchel@127.0.0.1:5432/satchel_no_such_database", "--data-dir", dir.appendingPathComponent("d").path])
            #expect(missing.status != 0 && !missing.stdout.contains("packaged"), "\(missing.stdout)")
            #expect(missing.stderr.contains("database \"satchel_no_such_database\" does not exist") && missing.stderr.contains("createdb"), "\(missing.stderr)")
            #expect(!missing.stderr.contains("Generic description"))
            #expect(!FileManager.default.fileExists(atPath: out), "no package")

            let file = dir.appendingPathComponent("a-file").path
            try Data("x".utf8).write(to: URL(fileURLWithPath: file))
            let notDirectory = try CLIRunner.run(["package", input.path, "--out", out, "--format", "cmaf", "--scheme", "cenc", "--register", "--data-dir", file])
            #expect(notDirectory.status != 0 && !notDirectory.stdout.contains("packaged") && !FileManager.default.fileExists(atPath: out), "\(notDirectory.stderr)")

            // The key ID is another asset's: the store refuses it once the package is written, and the package goes.
            let data = dir.appendingPathComponent("data").path
            let kid = "0123456789abcdef0123456789abcdef", key = "00112233445566778899aabbccddeeff"
            let first = try CLIRunner.run(["package", input.path, "--out", dir.appendingPathComponent("first").path, "--format", "cmaf", "--scheme", "cenc",
                                           "--key-id", kid, "--key", key, "--register", "--asset-id", "first", "--data-dir", data])
            #expect(first.status == 0, "\(first.stderr)")
            let held = try CLIRunner.run(["package", input.path, "--out", out, "--format", "cmaf", "--scheme", "cenc",
                                          "--key-id", kid, "--key", key, "--register", "--asset-id", "second", "--data-dir", data])
            #expect(held.status != 0 && !held.stdout.contains("packaged") && held.stderr.contains("was removed"), "\(held.stdout) \(held.stderr)")
            #expect(!FileManager.default.fileExists(atPath: out), "the package whose keys could not be registered is gone")
        }
    }

    @Test("package --register (keys in the store only), key files beside the folder or at --keys-out, never inside; keys list, import (a key another asset holds moves only with --reassign), delete; the KEK file is 0600 and the key never printed")
    func keys() async throws {
        try await TestMedia.offloaded {
            let input = try TestMedia.make("cli-keys", seconds: 3)
            let dir = try TestMedia.temporaryDirectory("cli-keys")
            let data = dir.appendingPathComponent("data").path
            let key = "00112233445566778899aabbccddeeff"
            let packaged = try CLIRunner.run(["package", input.path, "--out", dir.appendingPathComponent("pkg").path, "--format", "cmaf",
                                              "--scheme", "cenc", "--key-id", "0123456789abcdef0123456789abcdef", "--key", key,
                                              "--register", "--asset-id", "film", "--data-dir", data, "--offline", "--lease-seconds", "60"])
            #expect(packaged.status == 0, "\(packaged.stderr)")
            #expect(packaged.stdout.contains("registered 1 key for asset film"))
            // Registered keys are in the key store only: no key file, in the package or beside it.
            #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("pkg.keys.json").path))
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == ["data", "pkg"])
            #expect(!(try FileManager.default.subpathsOfDirectory(atPath: dir.appendingPathComponent("pkg").path)).contains { $0.hasSuffix(".json") })
            // Without --register the keys go beside the folder (mode 0600), or where --keys-out says, never inside the package.
            let unregistered = try CLIRunner.run(["package", input.path, "--out", dir.appendingPathComponent("pkg2").path, "--format", "cmaf",
                                                  "--scheme", "cenc", "--key-id", "0123456789abcdef0123456789abcdef", "--key", key])
            let keyFile = dir.appendingPathComponent("pkg2.keys.json").path
            #expect(unregistered.status == 0 && unregistered.stdout.contains("keys in \(keyFile)"), "\(unregistered.stdout)")
            #expect(try FileManager.default.attributesOfItem(atPath: keyFile)[.posixPermissions] as? Int == 0o600)
            let inside = try CLIRunner.run(["package", input.path, "--out", dir.appendingPathComponent("pkg3").path, "--format", "cmaf",
                                            "--scheme", "cenc", "--keys-out", dir.appendingPathComponent("pkg3/keys.json").path])
            #expect(inside.status != 0 && inside.stderr.contains("outside the package folder"), "\(inside.stderr)")
            #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("pkg3").path))
            let clearRegistered = try CLIRunner.run(["package", input.path, "--out", dir.appendingPathComponent("pkg4").path, "--format", "cmaf",
                                                     "--register", "--data-dir", data])
            #expect(clearRegistered.status != 0 && clearRegistered.stderr.contains("--register needs a protected --scheme"))
            #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("pkg4").path), "refused before packaging")
            #expect(try FileManager.default.attributesOfItem(atPath: data + "/kek.key")[.posixPermissions] as? Int == 0o600)
            let list = try CLIRunner.run(["keys", "list", "--data-dir", data, "--json"])
            #expect(list.status == 0 && list.stdout.contains("0123456789abcdef0123456789abcdef") && !list.stdout.contains(key))
            // The same key ID for another asset: refused, naming the asset that holds it; moved only with --reassign (said).
            let held = try CLIRunner.run(["keys", "import", keyFile, "--asset-id", "film-2", "--data-dir", data, "--not-after", "2030-01-01"])
            #expect(held.status != 0 && held.stderr.contains("key 0123456789abcdef0123456789abcdef belongs to asset film") && held.stderr.contains("--reassign"),
                    "\(held.stderr)")
            #expect(try CLIRunner.run(["keys", "list", "--data-dir", data]).stdout.contains("film\t"), "nothing moved")
            let imported = try CLIRunner.run(["keys", "import", keyFile, "--asset-id", "film-2", "--data-dir", data, "--not-after", "2030-01-01",
                                              "--reassign"])
            #expect(imported.status == 0 && imported.stdout.contains("key 0123456789abcdef0123456789abcdef moved from asset film to film-2"),
                    "\(imported.stdout) \(imported.stderr)")
            let again = try CLIRunner.run(["keys", "import", keyFile, "--asset-id", "film-2", "--data-dir", data])
            #expect(again.status == 0 && !again.stdout.contains("moved"), "importing to the asset that holds it is a replacement")
            let deleted = try CLIRunner.run(["keys", "delete", "film", "--data-dir", data])
            #expect(deleted.status == 0)
            let missing = try CLIRunner.run(["keys", "delete", "film", "--data-dir", data])
            #expect(missing.status != 0 && missing.stderr.hasPrefix("satchel: error: no asset or key film"))
            let badDate = try CLIRunner.run(["keys", "import", keyFile, "--asset-id", "x",
                                             "--data-dir", data, "--not-after", "tomorrow"])
            #expect(badDate.status != 0 && badDate.stderr.split(separator: "\n").count == 1)
            let noJWKS = try CLIRunner.run(["serve", "--data-dir", data])
            #expect(noJWKS.status != 0 && noJWKS.stderr.contains("--jwks"))
            let stall = try CLIRunner.run(["serve", "--data-dir", data, "--insecure-no-entitlement", "--stall-report", "10"])
            #expect(stall.status != 0 && stall.stderr.contains("--stall-report is 50 to 60000 milliseconds"), "\(stall.stderr)")
        }
    }
}
