import SatchelProtection
typealias SatchelProtectionContentKey = ContentKey
import ArgumentParser
import Foundation
import SatchelBytes
import Logging
import SatchelLicensing
import SatchelPackager

/// `satchel keys`: the key store.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "keys", abstract: "Import, export, list and delete keys and policies.",
                                                    subcommands: [Import.self, Export.self, List.self, Delete.self, RotateSigningKey.self])

    struct Import: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Import a package's key file (OUT.keys.json), a DASH-IF CPIX document's keys, or a whole catalogue (JSON Lines), with a policy.",
            discussion: """
                A catalogue holds one asset a line: {"assetID": "movie-1", "keys": [{"keyID": HEX, "key": HEX, "iv": HEX}],                 "policy": {"rentalSeconds": 172800, "offline": true}} ("fairPlayAssetID" optional, every policy field optional).                 It is imported in batches, each in one transaction; run the same command again after a failure and it takes up                 where it stopped (assets imported before are replaced, never doubled).
                """)
        @Argument(help: "The key file written by satchel package (OUT.keys.json).") var file: String?
        @Option(help: "A CPIX document whose content keys to import (instead of a key file).") var cpix: String?
        @Option(help: "A catalogue to import: JSON Lines, one asset with its keys and policy a line (instead of a key file).") var catalog: String?
        @Option(name: .customLong("private-key"), help: "With --cpix: the private key (PEM) of the certificate the document's keys are encrypted for.")
        var privateKey: String?
        @Option(name: .customLong("asset-id"), help: "The asset ID (not with --catalog: each line names its asset).") var assetID: String?
        @OptionGroup var store: StoreOptions
        @OptionGroup var policy: PolicyOptions
        @Flag(help: "Move a key ID another asset holds to this one (recorded in the log); without it such an import is refused.")
        var reassign = false

        func validate() throws {
            guard [file, cpix, catalog].compactMap({ $0 }).count == 1 else { throw ValidationError("give a key file, --cpix FILE or --catalog FILE (one of them)") }
            if privateKey != nil && cpix == nil { throw ValidationError("--private-key goes with --cpix") }
            if catalog != nil, assetID != nil { throw ValidationError("--asset-id does not go with --catalog: each line of a catalogue names its asset") }
            if catalog == nil, assetID == nil { throw ValidationError("--asset-id is required: the asset the keys are for") }
            if catalog != nil, reassign { throw ValidationError("--reassign does not go with --catalog") }
        }

        func execute() async throws {
            if let catalog {
                let (keyStore, database) = try await store.open()
                do {
                    try await CatalogImport(file: catalog, store: keyStore).run()
                } catch {
                    await database.shutdown()
                    throw error
                }
                await database.shutdown()
                return
            }
            let assetID = assetID ?? ""
            let keys: [ContentKeyAlias]
            var signalling: [KeyID: KeySignalling] = [:]
            if let cpix {
                let document = try CPIXFiles.read(cpix, privateKey: privateKey)
                keys = document.keys.map(\.contentKey)
                guard !keys.isEmpty else { throw CLIError("\(cpix): the CPIX document has no content key") }
                for key in document.keys {
                    signalling[key.contentKey.keyID] = KeySignalling(scheme: key.scheme, systems: document.keptSignalling(of: key.contentKey.keyID))
                }
            } else {
                let file = file ?? ""
                let read: KeyFile
                do { read = try KeyFile.read(file); keys = try read.contentKeys() } catch { throw CLIError("cannot read \(file): not a key file from satchel package") }
                for key in keys { signalling[key.keyID] = KeySignalling(scheme: read.scheme) }
            }
            let (keyStore, database) = try await store.open()
            do {
                var held: [String: String] = [:]
                if reassign {
                    for key in keys { held[key.keyID.hex] = (try? await keyStore.key(id: key.keyID))?.assetID }
                }
                try await keyStore.importKeys(keys, assetID: assetID, fairPlayAssetID: policy.fairPlayAssetID, policy: try policy.policy(),
                                              reassign: reassign, signalling: signalling)
                for key in keys {
                    guard let previous = held[key.keyID.hex], previous != assetID else { continue }
                    Logger(label: "satchel.audit").notice("key moved to another asset",
                                                          metadata: ["key": .string(key.keyID.hex), "from": .string(previous), "to": .string(assetID)])
                    print("key \(key.keyID.hex) moved from asset \(previous) to \(assetID)")
                }
                await database.shutdown()
            } catch {
                await database.shutdown()
                throw error
            }
            print("imported \(keys.count) key\(keys.count == 1 ? "" : "s") for asset \(assetID)")
        }
    }

    struct Export: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(
            commandName: "export",
            abstract: "Write an asset's keys as a DASH-IF CPIX document for a DRM vendor or another packager, with each DRM system's signalling; encrypted for a recipient's certificate, or in the clear.",
            discussion: """
                Keys imported from a CPIX document are exported with that document's signalling (a DRM vendor's pssh and key                 URIs) in place of Satchel's own for the same system, and with every other system it listed. The scheme is the                 one the keys were packaged or imported with (cbcs when the store does not know it) unless --scheme says otherwise.
                """)
        @Option(help: "The CPIX document to write (mode 0600).") var cpix: String
        @Option(name: .customLong("asset-id"), help: "The asset whose keys to export.") var assetID: String
        @Option(help: "The recipient's X.509 certificate (PEM or DER, an RSA key of 2048 bits or more): the keys are encrypted for it. Without it they are written in the clear.")
        var recipient: String?
        @Option(help: "The protection scheme the signalling is for: cenc or cbcs (default: the scheme the keys were packaged or imported with, else cbcs).")
        var scheme: PackageScheme?
        @OptionGroup var drm: DRMOptions
        @OptionGroup var store: StoreOptions

        func execute() async throws {
            if let scheme, scheme != .cenc, scheme != .cbcs { throw ValidationError("--scheme is cenc or cbcs") }
            let (keyStore, database) = try await store.open(readOnly: true)
            var keys: [ContentKeyAlias] = []
            var signalling: [KeyID: KeySignalling] = [:]
            do {
                do {
                    keys = try await keyStore.keys(asset: assetID).filter { $0.assetID == assetID }.map(\.key)
                    signalling = try await keyStore.signalling(asset: assetID)
                } catch LicensingError.unknownAsset {
                    keys = []
                }
            } catch {
                await database.shutdown()
                throw error
            }
            await database.shutdown()
            guard !keys.isEmpty else { throw CLIError("no keys for asset \(assetID)") }
            // The scheme the keys were packaged with, when they all name the same Common Encryption one.
            let stored = Set(keys.map { signalling[$0.keyID]?.scheme })
            let chosen = scheme ?? (stored == ["cenc"] ? .cenc : .cbcs)
            var options = PackageOptions(inputs: ["-"], output: "-", format: .cmaf, scheme: chosen)
            try drm.apply(to: &options, assetID: assetID)
            try options.validateSignalling()
            var kept: [CPIXDocument.System] = []
            for key in keys {
                guard let text = signalling[key.keyID]?.systems else { continue }
                kept += try CPIXDocument.keptSystems(text, keyID: key.keyID)
            }
            let document = try CPIXDocument.signalled(keys, contentID: assetID, options: options).keeping(kept)
            try CPIXFiles.write(document, to: cpix, recipient: recipient)
            var names = options.drmSystems.map(\.rawValue)
            for system in kept { if !names.contains(system.system?.rawValue ?? Hex.encode(system.systemID)) { names.append(system.system?.rawValue ?? Hex.encode(system.systemID)) } }
            let systems = names.joined(separator: ", ")
            print("exported \(keys.count) key\(keys.count == 1 ? "" : "s") of asset \(assetID) to \(cpix) (\(recipient == nil ? "in the clear" : "encrypted for the recipient"); "
                  + "scheme \(chosen.rawValue); signalling for \(systems)\(kept.isEmpty ? "" : ", as imported where the import gave it"))")
        }
    }

    struct List: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List keys (IDs and policies, never keys), a page at a time, by asset ID then key ID.",
            discussion: "A page ends with the --after value of the next page, when there is one; --all prints every page as JSON Lines.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var paging: PagingOptions
        @Option(help: "Only assets whose ID starts with this.") var prefix: String?
        @Flag(help: "Print the page as a JSON array.") var json = false

        func execute() async throws {
            let (keyStore, database) = try await store.open(readOnly: true)
            do {
                try await paging.walk(listing: KeySummary.listing, columns: 2, prefix: prefix, json: json) { request throws in
                    try await keyStore.summaries(request)
                } line: { row in
                    "\(row.assetID)\t\(row.keyID)\tfairplay:\(row.fairPlayAssetID)\toffline:\(row.policy.offline)"
                }
            } catch {
                await database.shutdown()
                throw error
            }
            await database.shutdown()
        }
    }

    struct Delete: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete an asset (with its keys) or one key by key ID.")
        @Argument(help: "Asset ID or key ID.") var id: String
        @OptionGroup var store: StoreOptions

        func execute() async throws {
            let (keyStore, database) = try await store.open()
            let deleted: Bool
            do { deleted = try await keyStore.delete(id) } catch { await database.shutdown(); throw error }
            await database.shutdown()
            guard deleted else { throw CLIError("no asset or key \(id)") }
            print("deleted \(id)")
        }
    }
}

extension KeysCommand {
    struct RotateSigningKey: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-signing-key",
            abstract: "Make a new key to sign licenses and device certificates with.",
            discussion: """
                The current key signs the new key's introduction, so registered devices take the new key the first time they meet                 it, and no device needs to register again; licenses and certificates signed before stay good. Running servers sign                 with the new key within a minute.
                """)
        @OptionGroup var store: StoreOptions

        func execute() async throws {
            let (_, database) = try await store.open()
            let kid: String
            do { kid = try await store.registry(database).rotateSigningKey() } catch { await database.shutdown(); throw error }
            await database.shutdown()
            print("signing key \(kid): licenses and certificates are signed with it from now on (running servers within a minute)")
        }
    }
}

typealias ContentKeyAlias = SatchelProtectionContentKey
