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
    static let configuration = CommandConfiguration(commandName: "keys", abstract: "Import, list and delete keys and policies.",
                                                    subcommands: [Import.self, List.self, Delete.self])

    struct Import: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(commandName: "import", abstract: "Import a package's key file (OUT.keys.json) with a policy.")
        @Argument(help: "The key file written by satchel package (OUT.keys.json).") var file: String
        @Option(name: .customLong("asset-id"), help: "The asset ID.") var assetID: String
        @OptionGroup var store: StoreOptions
        @OptionGroup var policy: PolicyOptions
        @Flag(help: "Move a key ID another asset holds to this one (recorded in the log); without it such an import is refused.")
        var reassign = false

        func execute() async throws {
            let keys: [ContentKeyAlias]
            do { keys = try KeyFile.read(file).contentKeys() } catch { throw CLIError("cannot read \(file): not a key file from satchel package") }
            let (keyStore, database) = try await store.open()
            do {
                let held = reassign ? Dictionary(try await keyStore.list().map { ($0.keyID, $0.assetID) }) { first, _ in first } : [:]
                try await keyStore.importKeys(keys, assetID: assetID, fairPlayAssetID: policy.fairPlayAssetID, policy: try policy.policy(),
                                              reassign: reassign)
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

    struct List: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List keys (IDs and policies, never keys).")
        @OptionGroup var store: StoreOptions
        @Flag(help: "Print JSON.") var json = false

        func execute() async throws {
            let (keyStore, database) = try await store.open(readOnly: true)
            let rows: [KeySummary]
            do { rows = try await keyStore.list() } catch { await database.shutdown(); throw error }
            await database.shutdown()
            if json {
                print(String(decoding: try JSONCoding.encoder(.pretty).encode(rows), as: UTF8.self))
            } else {
                for row in rows { print("\(row.assetID)\t\(row.keyID)\tfairplay:\(row.fairPlayAssetID)\toffline:\(row.policy.offline)") }
            }
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

typealias ContentKeyAlias = SatchelProtectionContentKey
