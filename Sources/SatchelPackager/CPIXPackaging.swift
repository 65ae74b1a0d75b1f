import SatchelProtection

extension PackageOptions {
    /// Takes the key and the DRM systems' signalling from a CPIX document: the key `keyID` names (or the document's
    /// only one), its IV when the document gives one, each known system's `pssh` box as the document has it, and
    /// FairPlay's key URI. Unless ``drm`` is set, the systems signalled are those the document lists for the key
    /// (Clear Key alone when it lists none). Returns the system IDs the document lists that Satchel does not know
    /// (their signalling is not written).
    @discardableResult
    public mutating func apply(_ document: CPIXDocument, keyID: KeyID? = nil) throws(PackagerError) -> [[UInt8]] {
        let chosen: CPIXDocument.Key
        if let keyID {
            guard let key = document.keys.first(where: { $0.contentKey.keyID == keyID }) else {
                throw .cpix("no content key \(keyID.uuidString) in the document")
            }
            chosen = key
        } else {
            guard document.keys.count == 1, let only = document.keys.first else {
                throw .cpix(document.keys.isEmpty ? "the document has no content key"
                            : "the document has \(document.keys.count) content keys: choose one with --key-id")
            }
            chosen = only
        }
        key = chosen.contentKey
        var unknown: [[UInt8]] = []
        var listed = Set<DRMSystem>()
        for entry in document.systems where entry.keyID == chosen.contentKey.keyID {
            guard let system = entry.system else {
                unknown.append(entry.systemID)
                continue
            }
            listed.insert(system)
            if let pssh = entry.pssh { psshBoxes[system] = pssh }
            if system == .fairPlay, fairPlayURI == nil, let uri = entry.hlsKeyURI { fairPlayURI = uri }
        }
        if drm == nil, !listed.isEmpty { drm = listed }
        return unknown
    }
}

extension CPIXDocument {
    /// A document of `keys` with each system's signalling as ``Packager`` writes it under `options` (its scheme,
    /// ``PackageOptions/drmSystems``, key URIs and system settings): the `pssh` box, FairPlay's key URI, and the
    /// media and master playlists' key tags.
    public static func signalled(_ keys: [ContentKey], contentID: String?, options: PackageOptions) throws(PackagerError) -> CPIXDocument {
        let signalling = DRMSignalling(options: options)
        var systems: [System] = []
        for key in keys {
            let tags = try signalling.keyTags(key)
            let boxes = try signalling.psshBoxes(key)
            for system in options.drmSystems {
                let box = boxes.first { (try? PSSH.parse($0).systemID) == system.systemID }
                let tag = tags.first { DRMSystem(hlsKeyFormat: $0.keyFormat) == system }
                systems.append(System(keyID: key.keyID, systemID: system.systemID, pssh: box, hlsKeyURI: system == .fairPlay ? tag?.uri : nil,
                                      hlsMediaTag: tag?.line(), hlsMasterTag: tag?.line(session: true)))
            }
        }
        return CPIXDocument(contentID: contentID, keys: keys.map { Key($0) }, systems: systems)
    }
}
