import ArgumentParser
import SatchelLicensing
import Foundation
import SatchelBytes
import SatchelAgent
import SatchelRights

/// `satchel license`: the device's licenses.
struct LicenseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "license", abstract: "The device's licenses: acquire (or challenge and install, sent your own way), list, use, renew, release, sync; request (FairPlay, Clear Key, AES-128 as a player would).",
        subcommands: [Acquire.self, Challenge.self, Install.self, List.self, Use.self, Renew.self, Release.self, Reset.self, Sync.self,
                      LicenseRequestCommand.self])

    struct Acquire: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(commandName: "acquire", abstract: "Acquire and store a license for an asset.")
        @Argument(help: "The asset ID.") var assetID: String
        @Option(help: "An entitlement token (or --token-file, $SATCHEL_TOKEN).") var token: String?
        @OptionGroup var tokenSource: TokenSource
        @OptionGroup var agent: AgentOptions
        @OptionGroup var request: LicenseAskOptions

        func execute() async throws {
            let token = try tokenSource.required(token)
            let (server, persistent, customData) = (request.server, request.persistent, request.customData)
            let (license, evaluation) = try await agent.with { agent in
                let license = try await agent.acquire(asset: assetID, token: token, persistent: persistent, server: server, customData: customData)
                return (license, try await agent.rights(asset: assetID))
            }
            print("license \(license.licenseID) for \(assetID): \(evaluation.status.rawValue)\(license.persistent ? ", persistent" : "")")
        }
    }

    struct List: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List stored licenses with their status (never keys).")
        @OptionGroup var agent: AgentOptions
        @Flag(help: "Print JSON.") var json = false

        func execute() async throws {
            let (licenses, owed) = try await agent.with { agent in (try await agent.licenses(), try await agent.owedReleases()) }
            var reports = licenses.map { RightsReport(asset: $0.license.assetID, evaluation: $0.evaluation, license: $0.license) }
            reports += owed.map { RightsReport(asset: $0.assetID, evaluation: .none, license: nil, pendingRelease: true) }
            if json { try RightsReport.print(reports) } else { reports.forEach { print($0.line) } }
        }
    }

    struct Use: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(commandName: "use",
                                                        abstract: "Consume the rights as a player start would; exit non-zero when playback is not allowed.")
        @Argument(help: "The asset ID.") var assetID: String
        @OptionGroup var agent: AgentOptions

        func execute() async throws {
            let keys = try await agent.with { try await $0.use(asset: assetID) }
            print("\(assetID): valid, \(keys.count) key\(keys.count == 1 ? "" : "s") ready for playback")
        }
    }

    struct Renew: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(commandName: "renew", abstract: "Renew an asset's license.")
        @Argument(help: "The asset ID.") var assetID: String
        @OptionGroup var agent: AgentOptions
        @Option(help: "An entitlement token (or --token-file, $SATCHEL_TOKEN).") var token: String?
        @OptionGroup var tokenSource: TokenSource

        func execute() async throws {
            let token = try tokenSource.required(token)
            let license = try await agent.with { try await $0.renew(asset: assetID, token: token) }
            let end = license.rights.effectiveEnd(license.usage).map { ISODate.string($0) } ?? "none"
            print("license \(license.licenseID) for \(assetID) renewed; ends \(end)")
        }
    }

    struct Release: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(commandName: "release",
                                                        abstract: "Delete an asset's license and give it back to the server (later if it cannot be reached).")
        @Argument(help: "The asset ID.") var assetID: String
        @OptionGroup var agent: AgentOptions

        func execute() async throws {
            let delivered = try await agent.with { try await $0.release(asset: assetID) }
            print(delivered ? "\(assetID): license released" : "\(assetID): license deleted; the release is owed and will be delivered at the next contact")
        }
    }

    struct Reset: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset",
            abstract: "Remove every license of this device at once; their releases are delivered at the next sync (satchel license sync).")
        @OptionGroup var agent: AgentOptions

        func execute() async throws {
            let assets = try await agent.with { try await $0.reset() }
            print(assets.isEmpty ? "no licenses to remove"
                  : "removed \(assets.count) license\(assets.count == 1 ? "" : "s") (\(Set(assets).sorted().joined(separator: ", "))); their releases are owed and delivered at the next sync")
        }
    }

    struct Sync: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(
            commandName: "sync",
            abstract: "Reconcile the licenses with the license server's records, fetch its signed time, deliver owed releases, renew what is due.")
        @OptionGroup var agent: AgentOptions
        @Option(help: "An entitlement token, needed to renew (or --token-file, $SATCHEL_TOKEN).") var token: String?
        @OptionGroup var tokenSource: TokenSource

        func execute() async throws {
            let token = try tokenSource.resolve(token)
            let report = try await agent.with { try await $0.sync(token: token) }
            let time = report.serverTime.map { ISODate.string($0) } ?? "-"
            if report.restored { print("the license store was restored from the license server's records") }
            print("server time \(time); releases delivered \(report.releasesDelivered), still owed \(report.releasesOwed); renewed \(report.renewed.count)"
                  + (report.renewalsPending.isEmpty ? "" : "; renewal due for \(report.renewalsPending.joined(separator: ", "))")
                  + (report.revoked.isEmpty ? "" : "; removed (released on the server) \(report.revoked.joined(separator: ", "))"))
        }
    }
}

/// `satchel licenses`: on the server, the device licenses with their device and state, a page at a time.
struct LicensesCommand: SatchelAsyncCommand {
    static let configuration = CommandConfiguration(commandName: "licenses", abstract: "List the Satchel licenses issued to devices (server side), newest first, a page at a time.")
    @OptionGroup var store: StoreOptions
    @OptionGroup var paging: PagingOptions
    @Flag(help: "Print the page as a JSON array.") var json = false

    func execute() async throws {
        let (_, database) = try await store.open(readOnly: true)
        do {
            let registry = try store.registry(database)
            try await paging.walk(listing: DeviceLicenseRecord.listing, columns: 1, json: json) { request throws in
                try await registry.listings.licenses(request)
            } line: { row in
                [row.licenseID, row.deviceID, row.subject, row.assetID, row.state.rawValue, row.persistent ? "persistent" : "streaming",
                 ISODate.string(row.issuedAt)].joined(separator: "\t")
            }
        } catch {
            await database.shutdown()
            throw error
        }
        await database.shutdown()
    }
}
