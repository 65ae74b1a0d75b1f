import ArgumentParser
import Foundation
import SatchelSystem
import SatchelBytes
import SatchelPackager
import SatchelLicensing
import SatchelProtection

extension PackageFormat: ExpressibleByArgument {}
extension PackageScheme: ExpressibleByArgument {}

/// `satchel package`: media files in, a protected HLS / DASH package out.
struct PackageCommand: SatchelAsyncCommand {
    static let configuration = CommandConfiguration(
        commandName: "package", abstract: "Package media files as protected HLS (MPEG-TS or CMAF) and DASH.")

    @Argument(help: "Input media files (MP4, MOV, MPEG-TS); several files make a bitrate ladder, audio-only files the audio group.")
    var inputs: [String]
    @Option(help: "Output directory (replaced atomically).") var out: String
    @Option(help: "hls-ts, cmaf (HLS and DASH) or smooth (Smooth Streaming).") var format: PackageFormat
    @Option(help: "clear, aes-128, sample-aes (hls-ts); cbcs, cenc (cmaf); cenc (smooth).") var scheme: PackageScheme = .clear
    @Option(name: .customLong("key-id"), help: "Key ID, 32 hex digits (generated if omitted).") var keyID: String?
    @Option(help: "Content key, 32 hex digits (generated if omitted).") var key: String?
    @Option(help: "IV, 32 hex digits (generated if omitted).") var iv: String?
    @Option(name: .customLong("key-file"),
            help: "Apple's key file (32 bytes: the content key, then the IV), as mediafilesegmenter's --encrypt-key-file: read when it exists, else made (mode 0600) with a new key and IV.")
    var keyFile: String?
    @Option(name: .customLong("key-uri"), help: "Key URI for AES-128 / identity key tags; {kid} becomes the key ID (default /keys/{kid}).")
    var keyURI: String?
    @OptionGroup var drm: DRMOptions
    @Option(help: "Take the key, its IV and the DRM systems' signalling from a DASH-IF CPIX document (the key --key-id names when it holds several).")
    var cpix: String?
    @Option(name: .customLong("private-key"), help: "With --cpix: the private key (PEM) of the certificate the document's keys are encrypted for.")
    var privateKey: String?
    @Option(name: .customLong("segment-duration"), help: "Target segment duration in seconds.") var segmentDuration: Double = 6
    @Option(name: .customLong("key-rotation"), help: "Use a new key every N segments (hls-ts).") var keyRotation: Int?
    @Option(name: .customLong("clear-lead"), help: ArgumentHelp("Leave the first SECONDS in the clear, so playback starts before the license arrives (cmaf and hls-ts; default 0).", valueName: "seconds"))
    var clearLead: Double = 0
    @Option(name: .customLong("keys-out"), help: "Where the keys go (mode 0600; default OUT.keys.json beside the folder, or none with --register); never inside OUT.")
    var keysOut: String?
    @Flag(help: "Import the keys into the key store (as satchel keys import would) once the package is written.") var register = false
    @Option(name: .customLong("asset-id"), help: "With --register: the asset ID (default: the output directory's name).") var assetID: String?
    @OptionGroup var store: StoreOptions
    @OptionGroup var policy: PolicyOptions

    func validate() throws {
        if (key == nil) != (keyID == nil), keyFile == nil, cpix == nil {
            throw ValidationError("--key-id and --key go together (or --key-id with --key-file or --cpix)")
        }
        if iv != nil && key == nil { throw ValidationError("--iv needs --key-id and --key") }
        if keyFile != nil && (key != nil || iv != nil) { throw ValidationError("--key-file holds the key and the IV: give it without --key and --iv") }
        if keyFile != nil && scheme == .clear { throw ValidationError("--key-file needs a protected --scheme") }
        if cpix != nil && (key != nil || keyFile != nil) { throw ValidationError("--cpix holds the key: give it without --key and --key-file (--key-id picks one of its keys)") }
        if privateKey != nil && cpix == nil { throw ValidationError("--private-key goes with --cpix") }
        if register && scheme == .clear { throw ValidationError("--register needs a protected --scheme") }
    }

    func execute() async throws {
        var contentKey: ContentKey?
        if let keyID, let key {
            contentKey = try ContentKey(keyID: KeyID(hex: keyID), key: SecretBytes(hexOption(key, count: 16, name: "--key")),
                                        iv: iv.map { try hexOption($0, count: 16, name: "--iv") } ?? SecureRandom.bytes(16))
        }
        if let keyFile {
            let (fileKey, fileIV, made) = try AppleKeyFile.readOrMake(keyFile)
            contentKey = try ContentKey(keyID: keyID.map { try KeyID(hex: $0) } ?? KeyID.random(), key: fileKey, iv: fileIV)
            if made { FileHandle.standardError.write(Data("satchel: made the key file \(keyFile) (a new key and IV)\n".utf8)) }
        }
        var options = PackageOptions(inputs: inputs, output: out, format: format, scheme: scheme, key: contentKey, keyURI: keyURI,
                                     segmentDuration: segmentDuration, keyRotationSegments: keyRotation)
        options.clearLead = clearLead
        var systems: [KeyID: String] = [:]  // a CPIX document's own signalling, kept with a registered key
        if let cpix {
            let document = try CPIXFiles.read(cpix, privateKey: privateKey)
            let unknown = try options.apply(document, keyID: try keyID.map { try KeyID(hex: $0) })
            if let key = options.key { systems[key.keyID] = document.keptSignalling(of: key.keyID) }
            for system in unknown {
                FileHandle.standardError.write(Data("satchel: the CPIX document's system \(Hex.encode(system)) is not one Satchel signals; left out\n".utf8))
            }
        }
        try drm.apply(to: &options, assetID: policy.fairPlayAssetID ?? assetID ?? URL(fileURLWithPath: out).lastPathComponent)
        // Registered keys live in the key store; a copy in a file is written only when asked for.
        options.keyFile = keysOut ?? (register ? nil : PackageOptions.defaultKeyFile(for: out))
        guard register else {
            print(try make(options).line)
            return
        }
        let kept = systems
        try await store.registering(asset: assetID ?? URL(fileURLWithPath: out).lastPathComponent, policy: policy, made: "package", at: out,
                                    scheme: scheme.rawValue, systems: kept) {
            let (line, summary) = try make(options)
            guard let keys = try summary.keys?.contentKeys() else { throw CLIError("the package has no keys to register") }
            return (line, keys)
        }
    }

    /// Packages with `options`: the line that says what was made, and the summary.
    private func make(_ options: PackageOptions) throws -> (line: String, summary: PackageSummary) {
        let bar = ProgressBar(label: "packaging")
        let start = Date()
        let summary = try Packager(options: options).run { bar.update($0) }
        bar.finish()
        let seconds = Date().timeIntervalSince(start)
        let mb = Double(summary.inputBytes) / 1_000_000
        return (String(format: "packaged %@: %d renditions, %d segments, %.1f s of media, %.1f MB in %.2f s (%.0f MB/s), scheme %@%@",
                       summary.output, summary.renditions.count, summary.segmentCount, summary.duration, mb, seconds, mb / max(seconds, 0.001),
                       scheme.rawValue + (scheme == .clear ? "" : " for " + options.drmSystems.map(\.rawValue).joined(separator: ", ")),
                       summary.keyFile.map { ", keys in \($0)" } ?? ""), summary)
    }
}

extension StoreOptions {
    /// Makes protected output whose keys go only to the key store: the store is opened and the policy checked before
    /// `make` writes anything (a store that cannot be opened leaves nothing behind); `make` answers what it made (the
    /// line it prints) and its keys. Should the import fail, `remove` takes the output away again, so no failure leaves
    /// output whose keys are nowhere; the made line is printed only once the keys are registered.
    func registering(asset: String, policy: PolicyOptions, made what: String, at path: String, scheme: String? = nil, systems: [KeyID: String] = [:],
                     _ make: () async throws -> (line: String, keys: [ContentKey])) async throws {
        let checked = try policy.policy()
        let (keyStore, database) = try await open()
        do {
            let (line, keys) = try await make()
            do {
                var signalling: [KeyID: KeySignalling] = [:]
                for key in keys { signalling[key.keyID] = KeySignalling(scheme: scheme, systems: systems[key.keyID]) }
                try await keyStore.importKeys(keys, assetID: asset, fairPlayAssetID: policy.fairPlayAssetID, policy: checked, reassign: false,
                                              signalling: signalling)
            } catch {
                try? FileManager.default.removeItem(atPath: path)
                throw CLIError("the keys could not be registered (\(error)); the \(what) at \(path) was removed, so none is left whose keys are nowhere. Fix the key store and run the command again")
            }
            print(line)
            print("registered \(keys.count) key\(keys.count == 1 ? "" : "s") for asset \(asset)")
            for key in keys { print("key ID \(key.keyID.hex) (base64url \(key.keyID.base64URL))") }
        } catch {
            await database.shutdown()
            throw error
        }
        await database.shutdown()
    }
}

/// A one-line progress bar on stderr, drawn only when stderr is a terminal.
final class ProgressBar: Sendable {
    private let label: String
    private let enabled = isatty(STDERR_FILENO) == 1
    private let lastPercent = Locked(-1)

    init(label: String) { self.label = label }

    func update(_ fraction: Double) {
        guard enabled else { return }
        let percent = Int((min(max(fraction, 0), 1) * 100).rounded(.down))
        guard lastPercent.withLock({ last in
            defer { last = percent }
            return last != percent
        }) else { return }
        let filled = percent * 30 / 100
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: 30 - filled)
        FileHandle.standardError.write(Data("\r\(label) [\(bar)] \(percent)%".utf8))
    }

    func finish() {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}
