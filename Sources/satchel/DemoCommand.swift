import ArgumentParser
import Foundation
import SatchelBytes
import SatchelSystem

/// `satchel demo`: the whole system on one machine with nothing else installed — the sample clip packaged three
/// ways, its keys registered, and `satchel serve` with the origin, the license service and the browser player.
struct DemoCommand: SatchelAsyncCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Package the sample clip (cmaf cenc, cmaf cbcs for every DRM, hls-ts sample-aes), register its keys and serve it with the browser player.",
        discussion: "Everything lives in --dir (made afresh each run). Runs until Ctrl-C. A demo only: its /demo/token endpoint gives a token to anyone on this machine.")

    @Option(help: "Working folder (replaced each run).") var dir = "satchel-demo"
    @Option(help: "Port on 127.0.0.1.") var port = 8080
    @Option(help: "The clip to package (default: Samples/satchel-sample.mp4 of the Satchel checkout).") var sample: String?

    /// The three packages: asset ID, format, scheme.
    /// (asset, format, scheme, DRM systems): the cbcs package is signalled for every DRM, as a service would publish it.
    static let packages = [("demo-cenc", "cmaf", "cenc", "clearkey"), ("demo-cbcs", "cmaf", "cbcs", "clearkey,playready,widevine,fairplay"),
                           ("demo-sample-aes", "hls-ts", "sample-aes", "clearkey")]

    func validate() throws {
        guard (1...65535).contains(port) else { throw ValidationError("--port must be 1 to 65535") }
    }

    /// The sample: `--sample`, else `Samples/` here, else the checkout this binary was built from.
    func sampleClip() throws -> String {
        if let sample { return sample }
        let candidates = ["Samples/satchel-sample.mp4",
                          URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                              .appendingPathComponent("Samples/satchel-sample.mp4").path]
        guard let found = candidates.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            throw CLIError("no sample clip: run from the Satchel checkout, or give --sample FILE")
        }
        return found
    }

    func execute() async throws {
        let clip = try sampleClip()
        let root = URL(fileURLWithPath: dir).standardizedFileURL
        // A demo holds its folder for as long as it runs (the lock beside it: the folder itself is made afresh): a
        // second demo on the same folder stops here, before anything of the first is touched.
        let lockPath = root.deletingLastPathComponent().appendingPathComponent(".\(root.lastPathComponent).lock").path
        try FileManager.default.createDirectory(at: root.deletingLastPathComponent(), withIntermediateDirectories: true)
        let folderLock = try FileLock(path: lockPath)
        guard folderLock.tryExclusive() else {
            throw CLIError("another satchel demo is running in \(root.path): stop it (Ctrl-C in its terminal), or give this one a folder of its own with --dir and a port with --port")
        }
        defer { withExtendedLifetime(folderLock) {} }
        try ServeCommand.requireFree(host: "127.0.0.1", port: port)  // before any work: a second demo says so at once
        let site = root.appendingPathComponent("site").path, data = root.appendingPathComponent("data").path
        let jwks = root.appendingPathComponent("jwks.json").path
        let manager = FileManager.default
        if manager.fileExists(atPath: root.path) { try manager.removeItem(at: root) }
        try manager.createDirectory(at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // The demo's entitlement secret: a fresh HS256 key, only in this file (never printed).
        let secret = Base64URL.encode(SecureRandom.bytes(32))
        try AtomicFile.write(Array(#"{"keys":[{"kty":"oct","kid":"demo","k":"\#(secret)"}]}"#.utf8), to: jwks, mode: 0o600)
        // The dashboard's operator key: fresh, only in this file (the login reads it from there).
        let operatorKey = root.appendingPathComponent("operator.key").path
        try AtomicFile.write(Array((Base64URL.encode(SecureRandom.bytes(32)) + "\n").utf8), to: operatorKey, mode: 0o600)
        for (asset, format, scheme, drm) in Self.packages {
            let package = try PackageCommand.parse([clip, "--out", "\(site)/\(asset)", "--format", format, "--scheme", scheme, "--drm", drm, "--segment-duration", "2",
                                                    "--register", "--asset-id", asset, "--data-dir", data, "--offline", "--lease-seconds", "3600"])
            try await package.execute()
        }
        let serve = try ServeCommand.parse(["--data-dir", data, "--jwks", jwks, "--port", String(port), "--bind", "127.0.0.1", "--origin", site,
                                            "--demo-tokens", "demo", "--operator-key-file", operatorKey])
        let text = instructions(satchel: Self.binary, device: root.appendingPathComponent("device").path, operatorKey: operatorKey)
        // Printed once the port is bound: a demo that cannot listen prints no banner.
        try await serve.run(whenListening: { _ in
            print(text)
            fflush(nil)  // every line out now: a pipe would hold them back
        })
    }

    /// This binary's absolute path, for the commands printed.
    static var binary: String {
        let path = CommandLine.arguments.first ?? "satchel"
        guard path.contains("/") else { return path }
        return URL(fileURLWithPath: path).standardizedFileURL.path
    }

    /// What to open and run, each on its own line. Tokens are fetched by the commands, never printed.
    func instructions(satchel: String, device: String, operatorKey: String) -> String {
        let base = "http://127.0.0.1:\(port)"
        let token = { (asset: String) in "\"$(curl -s -H 'Accept: text/plain' \(base)/demo/token/\(asset))\"" }
        return """

            Satchel demo on \(base) (Ctrl-C stops it)
            Player, CMAF cenc:  \(base)/play/demo-cenc
            Player, CMAF cbcs:  \(base)/play/demo-cbcs
            Dashboard:          \(base)/admin (sign in with the operator key: cat \(operatorKey))
            Register this device with the license service (once):
              \(satchel) agent register --server \(base) --token \(token("demo-cenc")) --data-dir \(device)
            Play the HLS (SAMPLE-AES) with its key, decrypted by the local playback proxy for any player:
              \(satchel) play \(base)/content/demo-sample-aes/master.m3u8 --data-dir \(device) --token \(token("demo-sample-aes")) --exec 'ffplay -i {url}'
            Offline round trip (download with a license, then play from disk, also with this server stopped):
              \(satchel) download add \(base)/content/demo-cenc/manifest.mpd --id demo-cenc --license --token \(token("demo-cenc")) --data-dir \(device)
              \(satchel) download run --data-dir \(device)
              \(satchel) play demo-cenc --data-dir \(device) --exec 'ffplay -i {url}'

            """
    }
}
