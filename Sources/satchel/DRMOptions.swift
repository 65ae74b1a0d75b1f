import ArgumentParser
import Foundation
import SatchelPackager
import SatchelProtection

/// The DRM systems a package (or a CPIX document's signalling) is for, shared by `package` and `keys export`.
struct DRMOptions: ParsableArguments {
    @Option(help: "The DRM systems to signal, comma-separated: clearkey, widevine, playready, fairplay (default clearkey; widevine and playready need cmaf with cenc or cbcs, fairplay sample-aes or cbcs).")
    var drm: String?
    @Option(name: .customLong("fairplay-uri"), help: "FairPlay key URI (skd://…); {kid} becomes the key ID (default with --drm fairplay: skd:// and the asset ID).")
    var fairPlayURI: String?
    @Option(name: .customLong("playready-license-url"), help: "PlayReady's license URL, written in its header (LA_URL).") var playReadyLicenseURL: String?
    @Option(name: .customLong("widevine-provider"), help: "Widevine's provider name, written in its pssh.") var widevineProvider: String?
    @Option(name: .customLong("content-id"), help: "Widevine's content ID, written in its pssh.") var contentID: String?
    @Option(name: .customLong("fairplay-versions"), help: "The FairPlay versions the key server supports, as KEYFORMATVERSIONS lists them (default 1; for example 1/2).")
    var fairPlayVersions: String?

    /// Sets the systems and their settings on `options`; FairPlay's key URI defaults to `skd://` and `assetID`.
    func apply(to options: inout PackageOptions, assetID: String) throws {
        if let fairPlayURI { options.fairPlayURI = fairPlayURI }
        if let drm {
            options.drm = try Self.systems(drm)
            if options.drm?.contains(.fairPlay) == true, options.fairPlayURI == nil { options.fairPlayURI = "skd://" + assetID }
        }
        if let playReadyLicenseURL { options.playReadyLicenseURL = playReadyLicenseURL }
        if let widevineProvider { options.widevineProvider = widevineProvider }
        if let contentID { options.contentID = contentID }
        if let fairPlayVersions {
            let versions = fairPlayVersions.split(separator: "/", omittingEmptySubsequences: false).map { UInt32($0) }
            guard !versions.isEmpty, versions.allSatisfy({ $0 != nil }) else {
                throw ValidationError("--fairplay-versions lists versions separated by slashes, such as 1 or 1/2")
            }
            options.fairPlayVersions = versions.compactMap { $0 }
        }
    }

    /// The systems `--drm` names ("widevine,playready,fairplay,clearkey").
    static func systems(_ list: String) throws -> Set<DRMSystem> {
        var systems = Set<DRMSystem>()
        for name in list.split(separator: ",", omittingEmptySubsequences: false) {
            let trimmed = name.trimmingCharacters(in: .whitespaces).lowercased()
            guard let system = DRMSystem(rawValue: trimmed) else {
                throw ValidationError("--drm: no DRM system \"\(trimmed.prefix(40))\"; name some of \(DRMSystem.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            systems.insert(system)
        }
        return systems
    }
}

/// CPIX documents on disk: read (bounded, opened with a private key file when their keys are encrypted) and
/// written with mode 0600 (they hold keys).
enum CPIXFiles {
    static func read(_ path: String, privateKey: String?) throws -> CPIXDocument {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        if let size = attributes?[.size] as? Int, size > CPIXDocument.sizeLimit { throw CLIError("\(path): larger than a CPIX document may be") }
        let text = String(decoding: try FileIO.read(path, what: "CPIX"), as: UTF8.self)
        let key = try privateKey.map { try CPIXPrivateKey(pem: String(decoding: try FileIO.read($0, what: "private key"), as: UTF8.self)) }
        return try CPIXDocument(xml: text, privateKey: key)
    }

    static func write(_ document: CPIXDocument, to path: String, recipient: String?) throws {
        let certificate = try recipient.map { try CPIXRecipient(certificate: try FileIO.read($0, what: "certificate")) }
        try FileIO.write(Array(try document.xml(for: certificate).utf8), to: path, mode: 0o600)
    }
}
