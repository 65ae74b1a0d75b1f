import Foundation
@testable import SatchelSystem
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The system layer's pieces with real files and processes: command lines split once, files opened with no link
/// followed, the transfer pace, owner-only folders and files, child processes with a clean signal state.
@Suite("System: command words, confined files, pace, private files, child processes")
struct SystemTests {
    static func folder(_ name: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("satchel-system-\(name)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test("a command line splits as a shell splits words and no further: quotes group, a backslash escapes, a placeholder stays within its word")
    func commandWords() throws {
        #expect(try CommandWords("ffplay -autoexit {url}").words == ["ffplay", "-autoexit", "{url}"])
        #expect(try CommandWords("  a   'b c'  \"d \\\"e\\\" \\\\ \\x\" f\\ g ''").words == ["a", "b c", "d \"e\" \\ \\x", "f g", ""])
        #expect(try CommandWords("sh -c 'echo $HOME; ls | wc'").words == ["sh", "-c", "echo $HOME; ls | wc"])
        let words = try CommandWords("player --title=x{url}x {url}").replacing("{url}", with: "a';touch PWNED;echo '")
        #expect(words == ["player", "--title=xa';touch PWNED;echo 'x", "a';touch PWNED;echo '"])
        for bad in ["", "   ", "'open", "\"open", "trailing\\"] {
            #expect(throws: CommandWords.Malformed.self, "\(bad)") { try CommandWords(bad) }
        }
    }

    @Test("a file below a folder opens with no link followed on the way: links (to a file, to a folder, the last component), a pipe and escapes are refused; a regular file reads exactly")
    func confinedFiles() throws {
        let root = try Self.folder("confined")
        let outside = try Self.folder("outside")
        try FileManager.default.createDirectory(atPath: root + "/a/b", withIntermediateDirectories: true)
        try Data([1, 2, 3, 4, 5]).write(to: URL(fileURLWithPath: root + "/a/b/file"))
        try Data("secret".utf8).write(to: URL(fileURLWithPath: outside + "/secret"))
        try FileManager.default.createSymbolicLink(atPath: root + "/a/dir", withDestinationPath: outside)
        try FileManager.default.createSymbolicLink(atPath: root + "/a/file-link", withDestinationPath: outside + "/secret")
        try FileManager.default.createSymbolicLink(atPath: root + "/a/up", withDestinationPath: "..")
        #expect(mkfifo(root + "/a/pipe", 0o600) == 0)
        let file = try ConfinedFile.open("a/b/file", below: root)
        let middle = try file.read(3, at: 1), whole = try file.readAll(limit: 5), tooLarge = try file.readAll(limit: 4)
        #expect(file.size == 5 && middle == [2, 3, 4] && whole == [1, 2, 3, 4, 5] && tooLarge == nil)
        #expect(throws: ConfinedFile.Failure.self) { try file.read(2, at: 4) }
        #expect(throws: ConfinedFile.Failure.link) { try ConfinedFile.open("a/dir/secret", below: root) }
        #expect(throws: ConfinedFile.Failure.link) { try ConfinedFile.open("a/file-link", below: root) }
        #expect(throws: ConfinedFile.Failure.link) { try ConfinedFile.open("a/up/a/b/file", below: root) }
        #expect(throws: ConfinedFile.Failure.notRegular) { try ConfinedFile.open("a/pipe", below: root) }
        #expect(throws: ConfinedFile.Failure.notRegular) { try ConfinedFile.open("a/b", below: root) }
        #expect(throws: ConfinedFile.Failure.missing) { try ConfinedFile.open("a/none", below: root) }
        #expect(throws: ConfinedFile.Failure.missing) { try ConfinedFile.open("a/b/file/more", below: root) }
        #expect(try ConfinedFile.openIfPresent("a/none", below: root) == nil)
        for escape in ["", "/etc/passwd", "../outside", "a/../a/b/file", "a//b/file", "./a/b/file", "a/b/file\0"] {
            #expect(throws: ConfinedFile.Failure.escapes, "\(escape)") { try ConfinedFile.open(escape, below: root) }
        }
    }

    @Test("a confined folder: opened once with no link followed (a link in its place refused), its files opened by name below it with the file's rules; it keeps reaching the folder it opened when its path is renamed or replaced")
    func confinedFolder() throws {
        let root = try Self.folder("confined-folder")
        let outside = try Self.folder("confined-folder-outside")
        try FileManager.default.createDirectory(atPath: root + "/asset/video", withIntermediateDirectories: true)
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: root + "/asset/video/s0.ts"))
        try Data([9]).write(to: URL(fileURLWithPath: outside + "/secret"))
        try FileManager.default.createSymbolicLink(atPath: root + "/asset/up", withDestinationPath: "..")
        try FileManager.default.createSymbolicLink(atPath: root + "/asset/key", withDestinationPath: outside + "/secret")
        try FileManager.default.createSymbolicLink(atPath: root + "/linked", withDestinationPath: outside)
        let folder = try ConfinedFolder.open(root + "/asset/")
        let read = try folder.open("video/s0.ts").readAll(limit: 10)
        #expect(folder.name == "asset" && read == [1, 2, 3])
        #expect(throws: ConfinedFile.Failure.link) { try folder.open("key") }
        #expect(throws: ConfinedFile.Failure.link) { try folder.open("up/asset/video/s0.ts") }
        #expect(throws: ConfinedFile.Failure.escapes) { try folder.open("../asset/video/s0.ts") }
        #expect(try folder.openIfPresent("video/none") == nil)
        #expect(throws: ConfinedFile.Failure.link) { try ConfinedFolder.open(root + "/linked") }
        #expect(try ConfinedFolder.openIfPresent(root + "/none") == nil)
        // The path moved away and another folder put in its place: the handle still reaches the folder it opened.
        try FileManager.default.moveItem(atPath: root + "/asset", toPath: root + "/moved")
        try FileManager.default.createDirectory(atPath: root + "/asset/video", withIntermediateDirectories: true)
        try Data([7]).write(to: URL(fileURLWithPath: root + "/asset/video/s0.ts"))
        let again = try folder.open("video/s0.ts").readAll(limit: 10)
        #expect(again == [1, 2, 3])
    }

    @Test("the pace: a window below the floor stops the transfer, one above starts the next window; the deadline stops it whatever the rate")
    func pace() async throws {
        var slow = TransferPace(bytesPerSecond: 1000, period: .milliseconds(50))
        #expect(slow.count(10) == nil)
        try await Task.sleep(for: .milliseconds(60))
        #expect(slow.count(10)?.contains("slower than 1000 bytes/s") == true)
        var fast = TransferPace(bytesPerSecond: 1000, period: .milliseconds(50))
        try await Task.sleep(for: .milliseconds(60))
        #expect(fast.count(1_000_000) == nil, "a window that brought enough starts the next")
        var bounded = TransferPace(bytesPerSecond: 0, period: .seconds(1), deadline: .milliseconds(30))
        #expect(bounded.count(1) == nil)
        try await Task.sleep(for: .milliseconds(40))
        #expect(bounded.count(1 << 30)?.contains("took longer than") == true)
    }

    @Test("private folders and files: made 0700 / 0600, a wider existing one tightened, parents made too")
    func privateFiles() throws {
        let root = try Self.folder("private")
        try PrivateFiles.folder(root + "/x/y")
        func mode(_ path: String) throws -> Int { try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int ?? -1 }
        #expect(try mode(root + "/x/y") == 0o700 && mode(root + "/x") == 0o700)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: root + "/x/y")
        try PrivateFiles.folder(root + "/x/y")
        #expect(try mode(root + "/x/y") == 0o700)
        try PrivateFiles.file(root + "/x/y/db")
        #expect(try mode(root + "/x/y/db") == 0o600)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: root + "/x/y/db")
        try PrivateFiles.file(root + "/x/y/db")
        #expect(try mode(root + "/x/y/db") == 0o600)
        try FileManager.default.createSymbolicLink(atPath: root + "/x/y/link", withDestinationPath: "/etc/hostname")
        #expect(throws: SystemError.self) { try PrivateFiles.file(root + "/x/y/link") }
    }

    @Test("a path's parent folder, without Foundation's path functions (which trap on a one-character path on Linux)")
    func parentFolder() {
        for (path, parent) in [("d", ""), ("d/kek.key", "d"), ("/a/b/c", "/a/b"), ("/c", "/"), ("/", "/"), ("", ""), ("a//b", "a"), ("a/b/", "a"),
                               ("//x", "/"), ("ab", ""), ("./d", ".")] {
            #expect(PrivateFiles.parent(of: path) == parent, "\(path)")
        }
    }

    @Test("a child process: its exit status as a shell gives it, no signal blocked or ignored, output to a descriptor, no descriptor but stdin, stdout and stderr, and its whole group stopped by a signal")
    func childProcesses() async throws {
        #expect(ChildProcess.nullDevice >= 0)
        #expect(await (try ChildProcess.spawn("sh", ["-c", "exit 7"])).wait() == 7)
        #expect(await (try ChildProcess.spawn("sh", ["-c", "kill -TERM $$"])).wait() == 143)
        #expect(throws: SystemError.self) { try ChildProcess.spawn("/nonexistent/program", []) }
        let status = Pipe()
        // This process ignores SIGPIPE and blocks signals on its threads; the child must see neither.
        signal(SIGUSR1, SIG_IGN)
        defer { signal(SIGUSR1, SIG_DFL) }
        let child = try ChildProcess.spawn("grep", ["-E", "^Sig(Blk|Ign)", "/proc/self/status"], output: status.fileHandleForWriting.fileDescriptor)
        try status.fileHandleForWriting.close()
        let output = String(decoding: status.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(child.waitBlocking() == 0)
        #expect(output == "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n", "\(output)")
        // Only stdin, stdout and stderr: a descriptor opened without close-on-exec (both ends of a pipe here) stays out.
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { for end in ends { close(end) } }
        let listing = Pipe()
        let lister = try ChildProcess.spawn("sh", ["-c", "ls /proc/$$/fd"], output: listing.fileHandleForWriting.fileDescriptor)
        try listing.fileHandleForWriting.close()
        let descriptors = String(decoding: listing.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n").compactMap { Int32($0) }
        #expect(lister.waitBlocking() == 0)
        #expect(descriptors.sorted() == [0, 1, 2], "the child holds \(descriptors), this process's pipe was \(ends)")
        // A group: the program and what it started end together.
        let group = try ChildProcess.spawn("sh", ["-c", "sleep 60 & exec sleep 61"], ownGroup: true)
        try await Task.sleep(for: .milliseconds(200))
        group.signal(SIGTERM)
        #expect(await group.wait() == 143)
        // Nothing of the group is left running (a member that ended but was not reaped yet is not running).
        func running() -> [String] {
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            return entries.filter { $0.allSatisfy(\.isNumber) }.compactMap { pid -> String? in
                guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                      let close = stat.lastIndex(of: ")") else { return nil }
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                return fields.count > 2 && fields[2] == "\(group.pid)" && fields[0] != "Z" ? pid : nil
            }
        }
        for _ in 0..<50 where !running().isEmpty { try await Task.sleep(for: .milliseconds(100)) }
        #expect(running().isEmpty, "nothing of the group is left")
    }
}
