import ArgumentParser
import Foundation
import SatchelAgent
import SatchelBytes
import SatchelHTTP
import SatchelPackager
import SatchelPlayback
import SatchelProtection
import SatchelSystem

/// `satchel protect FILE --out FILE.satchel`: any file made a protected file, licensed like video.
struct ProtectCommand: SatchelAsyncCommand {
    static let configuration = CommandConfiguration(
        commandName: "protect",
        abstract: "Protect any file (a PDF, an EPUB, an audiobook, …) for random-access reading under a license.",
        discussion: "The output is written all at once (a crash leaves the old file or none). The key goes beside it as OUT.keys.json (mode 0600), to --keys-out, or into the key store with --register.")
    @Argument(help: "The file to protect.") var file: String
    @Option(help: "The protected file to write.") var out: String
    @Option(name: .customLong("content-type"), help: "Its media type (default: from the file's extension, else application/octet-stream).") var contentType: String?
    @Option(name: .customLong("key-id"), help: "Key ID, 32 hex digits (generated if omitted).") var keyID: String?
    @Option(help: "Content key, 32 hex digits (generated if omitted).") var key: String?
    @Option(name: .customLong("chunk-size"), help: "Plain bytes per chunk, 1024 to 16777216.") var chunkSize = ProtectedFileHeader.defaultChunkSize
    @Option(help: "A title, kept in the file's header.") var title: String?
    @Option(name: .customLong("keys-out"), help: "Where the key goes (mode 0600; default OUT.keys.json, or none with --register).") var keysOut: String?
    @Flag(help: "Import the key into the key store (as satchel keys import would) once the file is written.") var register = false
    @Option(name: .customLong("asset-id"), help: "With --register: the asset ID (default: the output's name without .satchel).") var assetID: String?
    @OptionGroup var store: StoreOptions
    @OptionGroup var policy: PolicyOptions

    func validate() throws {
        if (key == nil) != (keyID == nil) { throw ValidationError("--key-id and --key go together") }
        if register && keysOut != nil { throw ValidationError("--register and --keys-out: the key goes to one place") }
        if !ProtectedFileHeader.chunkSizes.contains(chunkSize) { throw ValidationError("--chunk-size is 1024 to 16777216") }
    }

    func execute() async throws {
        let contentKey: ContentKey
        if let keyID, let key {
            contentKey = try ContentKey(keyID: KeyID(hex: keyID), key: SecretBytes(hexOption(key, count: 16, name: "--key")), iv: [UInt8](repeating: 0, count: 16))
        } else {
            contentKey = try ContentKey(keyID: .random(), key: SecretBytes(SecureRandom.bytes(16)), iv: [UInt8](repeating: 0, count: 16))
        }
        let type = contentType ?? ContentTypes.type(of: file)
        let keyFile = register ? nil : (keysOut ?? out + ".keys.json")
        let (file, out, chunkSize, title, assetID) = (file, out, chunkSize, title, assetID)
        let protect = { () throws -> String in
            let header = try FileProtector.protect(input: file, output: out, key: contentKey, contentType: type, chunkSize: chunkSize,
                                                   metadata: title.map { ["title": $0] } ?? [:], keyFile: keyFile)
            return "protected \(file) as \(out): \(header.plainSize) bytes of \(type), \(header.chunkCount) chunk\(header.chunkCount == 1 ? "" : "s"), key ID \(contentKey.keyID.hex)"
                + (keyFile.map { ", key in \($0)" } ?? "")
        }
        guard register else {
            print(try protect())
            return
        }
        let name = URL(fileURLWithPath: out).lastPathComponent
        try await store.registering(asset: assetID ?? (name.hasSuffix(".satchel") ? String(name.dropLast(8)) : name), policy: policy,
                                    made: "protected file", at: out) { (try protect(), [contentKey]) }
    }
}

/// `satchel open FILE`: a protected file's plain bytes, with its key from a key file or from the device's license.
struct OpenCommand: SatchelAsyncCommand {
    static let configuration = CommandConfiguration(
        commandName: "open",
        abstract: "Decrypt a protected file to --out or stdout: its key from --keys, or from this device's license that holds the file's key (or the one for --asset-id), only while the rights allow.",
        discussion: "Exit status: 0 when every chunk opened; 1 when one is damaged (nothing of it is written; with --out, nothing at all), the key is wrong, or the rights do not allow it.")
    @Argument(help: "The protected file: a path, or an http(s) URL (read by range: only what is needed is fetched).") var file: String
    @Option(help: "Where to write the plain bytes (default: stdout).") var out: String?
    @Option(help: "A key file (FILE.keys.json) holding the file's key.") var keys: String?
    @Option(name: .customLong("data-dir"), help: "The device agent's data directory: the key comes from its license holding the file's key.") var dataDirectory: String?
    @Option(name: .customLong("asset-id"), help: "With --data-dir: the asset whose license to use (default: the license holding the file's key).") var assetID: String?
    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard (keys == nil) != (dataDirectory == nil) else { throw ValidationError("give --keys FILE or --data-dir DIR") }
        if assetID != nil, dataDirectory == nil { throw ValidationError("--asset-id goes with --data-dir") }
    }

    func execute() async throws {
        let remote = file.hasPrefix("http://") || file.hasPrefix("https://") ? OriginByteSource(url: file) : nil
        do {
            try await decrypt(try remote ?? LocalByteSource(path: file))
        } catch {
            await remote?.close()
            throw error
        }
        await remote?.close()
    }

    private func decrypt(_ source: any ProtectedByteSource) async throws {
        let header = try ProtectedFileHeader.parse(try await source.read(offset: 0, count: ProtectedFileHeader.maximumLength))
        let key = try await self.key(for: header)
        let reader = try await ProtectedFileReader.open(source, key: key)
        if let out {
            try await Self.write(reader, to: out)
        } else {
            for index in 0..<reader.header.chunkCount { FileHandle.standardOutput.write(Data(try await reader.chunk(index))) }
        }
    }

    /// The content key for `header`: from the key file, or the agent's keys for the asset while its rights allow.
    private func key(for header: ProtectedFileHeader) async throws -> SecretBytes {
        if let keys {
            guard let entry = try KeyFile.read(keys).contentKeys().first(where: { $0.keyID == header.keyID }) else {
                throw CLIError("\(keys) holds no key \(header.keyID.hex), which the file needs")
            }
            return entry.key
        }
        try logging.bootstrap(fallback: .warning)
        let agent = try await Agent(dataDirectory: dataDirectory ?? "", logger: .init(label: "satchel.agent"))
        do {
            var found = assetID
            if found == nil { found = try await LicenseByKey.asset(for: header, agent: agent) }
            guard let asset = found else {
                throw CLIError("this device holds no license with the file's key \(header.keyID.hex): acquire one (satchel license acquire ASSET …), or name its asset with --asset-id")
            }
            let opened = try await agent.use(asset: asset)
            await agent.close()
            guard let key = opened.first(where: { $0.keyID == header.keyID.hex }) else {
                throw CLIError("the license for \(asset) holds no key \(header.keyID.hex), which the file needs")
            }
            return key.key
        } catch {
            await agent.close()
            throw error
        }
    }

    /// Writes every chunk to `path`, all or nothing: chunks go to a file beside it (mode 0600) as they open, renamed
    /// into place at the end; a damaged chunk leaves no file.
    private static func write(_ reader: ProtectedFileReader, to path: String) async throws {
        let staged = path + ".opening-\(SecureRandom.uuid().uuidString)"
        defer { _ = unlink(staged) }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: try Self.create(staged)))
        defer { try? handle.close() }
        for index in 0..<reader.header.chunkCount { try handle.write(contentsOf: try await reader.chunk(index)) }
        try handle.synchronize()
        guard rename(staged, path) == 0 else { throw CLIError("cannot rename the plain file into \(path): \(String(cString: strerror(errno)))") }
    }

    /// Creates `path` empty, mode 0600 (the plain bytes are for this user).
    private static func create(_ path: String) throws -> String {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CLIError("cannot create \(path): \(String(cString: strerror(errno)))") }
        close(fd)
        return path
    }
}
