// Download → license → play, as an app embeds Satchel (no command line involved):
//
//     OfflinePlayback SERVER TOKEN MANIFEST_URL ASSET_ID DATA_DIR OUTPUT
//
// registers this device with the license server, downloads the HLS or DASH asset with a persistent license, then,
// offline, opens it in the playback proxy and reads what a player would: the top-level playlist, its first media
// playlist and every segment of it, made clear by the proxy and written one after the other to OUTPUT.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SatchelAgent
import SatchelDevice
import SatchelDownloads
import SatchelPlayback

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 6 else {
    FileHandle.standardError.write(Data("usage: OfflinePlayback SERVER TOKEN MANIFEST_URL ASSET_ID DATA_DIR OUTPUT\n".utf8))
    exit(2)
}
let (server, token, manifest, assetID, data, output) = (arguments[1], arguments[2], arguments[3], arguments[4], arguments[5], arguments[6])

// 1. The device: its key pair and registration live in the data directory (registering again answers the same ID).
let agent = try await Agent(dataDirectory: data)
let deviceID = try await agent.register(server: server, token: token, name: "OfflinePlayback example")
print("device \(deviceID)")

// 2. The download, by the device's engine: before each download the backplane's permission and the license step (a
//    persistent license before the first byte); tokens are sealed at rest with the device's key.
var configuration = DownloadManager.Configuration(dataDirectory: data)
// The engine watches the system's network monitor, and a network whose type it cannot tell counts as metered (nothing
// downloads). A machine known to be on an unmetered network without a monitor — a server, a CI runner — says so.
if ProcessInfo.processInfo.environment["SATCHEL_METERED_UNKNOWN"] == "allow" { configuration.rules.meteredUnknown = .allow }
let engine = try await DeviceEngine.open(agent: agent, configuration: configuration)
let downloads = engine.downloads
try await downloads.add(url: manifest, id: assetID, options: DownloadOptions(license: LicenseRequest(token: token, assetID: assetID)))
let summary = await downloads.run()
guard summary.allComplete else {
    let failure = try await downloads.asset(assetID).failure.map { "\($0)" } ?? "not complete"
    FileHandle.standardError.write(Data("download failed: \(failure)\n".utf8))
    exit(1)
}
print("downloaded \(assetID): \(try await agent.rights(asset: assetID).status.rawValue)")

// 3. Playback: the proxy serves the download to the player on loopback, decrypting with the license's keys.
let proxy = try PlaybackProxy(library: DownloadLibrary(manager: downloads), rights: RenewingAgentRights(agent: agent) { _ in token })
let entry = try await proxy.open(asset: assetID)
let content = await proxy.info(url: entry)
print("playing \(entry) (protected: \(content?.protected ?? false), audio tracks: \(content?.audioTracks.count ?? 0))")

/// The body of `url`, as a player would fetch it.
func fetch(_ url: URL) async throws -> Data {
    let (body, response) = try await URLSession.shared.data(from: url)
    guard (response as? HTTPURLResponse)?.statusCode == 200 else { throw URLError(.badServerResponse) }
    return body
}

/// The URIs of a playlist (its lines that are not tags), resolved against `base`.
func uris(_ playlist: Data, base: URL) -> [URL] {
    String(decoding: playlist, as: UTF8.self).split(separator: "\n").compactMap { line in
        line.hasPrefix("#") || line.trimmingCharacters(in: .whitespaces).isEmpty ? nil : URL(string: String(line), relativeTo: base)?.absoluteURL
    }
}

guard let entryURL = URL(string: entry), let media = uris(try await fetch(entryURL), base: entryURL).first else { exit(1) }
let segments = uris(try await fetch(media), base: media)
guard FileManager.default.createFile(atPath: output, contents: nil), let file = FileHandle(forWritingAtPath: output) else { exit(1) }
var bytes = 0
for segment in segments {
    let body = try await fetch(segment)
    file.write(body)
    bytes += body.count
}
try file.close()
print("read \(segments.count) segments, \(bytes) bytes, clear")
await proxy.stop()
await engine.close()
await agent.close()
