import Foundation
import SatchelBytes
import SatchelMedia
import SatchelProtection

/// How a package tells each DRM system about its keys: the `pssh` boxes of its init segments, the MPD's
/// `ContentProtection` elements and the HLS key tags, for the systems of ``PackageOptions/drmSystems``.
struct DRMSignalling {
    let options: PackageOptions

    private var systems: [DRMSystem] { options.drmSystems }

    private var commonScheme: CommonEncryption.Scheme? {
        options.scheme == .cbcs ? .cbcs : options.scheme == .cenc ? .cenc : nil
    }

    /// The `pssh` boxes of a CMAF init segment (Clear Key's common box, PlayReady's, Widevine's; FairPlay has none).
    func psshBoxes(_ key: ContentKey) throws(PackagerError) -> [[UInt8]] {
        var boxes: [[UInt8]] = []
        for system in systems { if let box = try box(system, key) { boxes.append(box) } }
        return boxes
    }

    /// A system's `pssh` box for `key`: the one its key service made (``PackageOptions/psshBoxes``), else Satchel's.
    private func box(_ system: DRMSystem, _ key: ContentKey) throws(PackagerError) -> [UInt8]? {
        if let given = options.psshBoxes[system] { return given }
        switch system {
        case .clearKey: return PSSH.box(keyIDs: [key.keyID])
        case .playReady: return PlayReadyHeader.box(object: try playReadyObject(key))
        case .widevine: return widevineData(key).box
        case .fairPlay: return nil
        }
    }

    /// The MPD's `ContentProtection` elements of a protected adaptation set: the scheme with its default key ID,
    /// then each system's.
    func contentProtection(_ key: ContentKey) throws(PackagerError) -> [DASHContentProtection] {
        var elements = [DASHContentProtection(schemeIDURI: "urn:mpeg:dash:mp4protection:2011", value: options.scheme.rawValue,
                                              defaultKID: key.keyID.uuidString)]
        for system in systems {
            guard let box = try box(system, key) else { continue }
            elements.append(DASHContentProtection(schemeIDURI: system.dashSchemeIDURI, value: system == .playReady ? "MSPR 2.0" : nil,
                                                  pssh: base64(box), playReadyObject: system == .playReady ? base64(try playReadyObject(key)) : nil))
        }
        return elements
    }

    /// The `EXT-X-KEY` tags for `key`: one per system, the key's own data in a data URI for Widevine and PlayReady.
    func keyTags(_ key: ContentKey) throws(PackagerError) -> [HLSKey] {
        let iv = "0x" + Hex.encode(key.iv)
        let identityURI = (options.keyURI ?? PackageOptions.defaultKeyURI).replacingOccurrences(of: "{kid}", with: key.keyID.hex)
        let method: String
        switch options.scheme {
        case .clear: return []
        case .aes128: return [HLSKey(method: "AES-128", uri: identityURI, iv: iv)]
        case .sampleAES, .cbcs: method = "SAMPLE-AES"
        case .cenc: method = "SAMPLE-AES-CTR"
        }
        var tags: [HLSKey] = []
        for system in systems {
            switch system {
            case .fairPlay:
                let uri = options.fairPlayURI.map { $0.replacingOccurrences(of: "{kid}", with: key.keyID.hex) }
                tags.append(HLSKey(method: method, uri: uri, keyFormat: system.hlsKeyFormat,
                                   keyFormatVersions: options.fairPlayVersions.map(String.init).joined(separator: "/")))
            case .widevine:
                tags.append(HLSKey(method: method, uri: "data:text/plain;base64," + base64(try box(system, key) ?? []),
                                   keyFormat: system.hlsKeyFormat, keyFormatVersions: "1", keyID: "0x" + key.keyID.hex))
            case .playReady:
                tags.append(HLSKey(method: method, uri: "data:text/plain;charset=UTF-16;base64," + base64(try playReadyObject(key)),
                                   keyFormat: system.hlsKeyFormat, keyFormatVersions: "1"))
            case .clearKey:
                tags.append(HLSKey(method: method, uri: identityURI, iv: iv, keyFormat: system.hlsKeyFormat, keyFormatVersions: "1"))
            }
        }
        // FairPlay's tag first: Apple's players take the first tag they can use.
        return tags.filter { $0.keyFormat == DRMSystem.fairPlay.hlsKeyFormat } + tags.filter { $0.keyFormat != DRMSystem.fairPlay.hlsKeyFormat }
    }

    private func widevineData(_ key: ContentKey) -> WidevinePSSHData {
        WidevinePSSHData(keyIDs: [key.keyID], provider: options.widevineProvider, contentID: options.contentID.map { Array($0.utf8) },
                         protectionScheme: commonScheme?.rawValue)
    }

    /// PlayReady's header object: the data of the `pssh` box its key service made, else Satchel's for `key`.
    private func playReadyObject(_ key: ContentKey) throws(PackagerError) -> [UInt8] {
        if let given = options.psshBoxes[.playReady] {
            guard let parsed = try? PSSH.parse(given) else { throw .invalidOptions("PlayReady's pssh box cannot be read") }
            return parsed.data
        }
        guard let scheme = commonScheme else { throw .invalidOptions("PlayReady needs --scheme cenc or cbcs") }
        do {
            return try PlayReadyHeader.object(keyID: key.keyID, key: key.key, scheme: scheme, licenseURL: options.playReadyLicenseURL)
        } catch {
            throw .invalidOptions("\(error)")
        }
    }

    private func base64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }
}
