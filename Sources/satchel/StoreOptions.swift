import SatchelBytes
import SatchelFairPlay
typealias SatchelFairPlayHDCP = HDCPRequirement
import ArgumentParser
import Foundation
import SatchelBackplane
import SatchelLicensing

/// `--data-dir`, `--database-url`, `--kek-file`: where keys live and how they are sealed.
struct StoreOptions: ParsableArguments {
    @Option(name: .customLong("data-dir"), help: "Data directory (SQLite database, generated KEK). Default: $SATCHEL_DATA_DIR or ./satchel-data.")
    var dataDirectory: String?
    @Option(name: .customLong("database-url"), help: "postgres://user:password@host:port/db instead of SQLite (or $SATCHEL_DATABASE_URL).")
    var databaseURL: String?
    @Option(name: .customLong("kek-file"), help: "Key-encryption key file (64 hex digits); or $SATCHEL_KEK; default <data-dir>/kek.key, created on first use.")
    var kekFile: String?

    var resolvedDataDirectory: String {
        dataDirectory ?? ProcessInfo.processInfo.environment["SATCHEL_DATA_DIR"] ?? "satchel-data"
    }

    /// Opens the database and the key store. `readOnly` commands create nothing: a data directory that does
    /// not exist (with SQLite) is an error, not a new empty store with a new key-encryption key.
    func open(readOnly: Bool = false) async throws -> (KeyStore, LicensingDatabase) {
        let url = resolvedDatabaseURL
        if readOnly, url == nil { try Self.requireExisting(resolvedDataDirectory) }
        let (kek, created) = try KeyEncryptionKey.load(file: kekFile, dataDirectory: resolvedDataDirectory)
        if let created {
            FileHandle.standardError.write(Data("satchel: created a new key-encryption key in \(created); back it up: without it the stored keys cannot be opened\n".utf8))
        }
        let database = try await LicensingDatabase(dataDirectory: resolvedDataDirectory, url: url, more: BackplaneMigrations.all, files: [SyncTimesTable.file])
        return (FluentKeyStore(database: database, kek: kek), database)
    }

    /// The database URL given (`--database-url` or `$SATCHEL_DATABASE_URL`), nil for SQLite.
    var resolvedDatabaseURL: String? { databaseURL ?? ProcessInfo.processInfo.environment["SATCHEL_DATABASE_URL"] }

    /// Devices and their licenses, in the database `open` returned (the signing key sealed with the same KEK).
    func registry(_ database: LicensingDatabase) throws -> DeviceRegistry {
        DeviceRegistry(database: database.database, kek: try KeyEncryptionKey.load(file: kekFile, dataDirectory: resolvedDataDirectory).kek)
    }
}

extension StoreOptions {
    /// Throws unless `directory` exists (read-only commands never create one).
    static func requireExisting(_ directory: String) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CLIError("no data directory at \(directory) (give --data-dir, or set $SATCHEL_DATA_DIR)")
        }
    }
}

/// Policy options shared by `keys import` and `package --register`.
struct PolicyOptions: ParsableArguments {
    @Option(name: .customLong("fairplay-asset-id"), help: "The asset ID inside FairPlay SPCs (default: the asset ID).") var fairPlayAssetID: String?
    @Option(name: .customLong("not-before"), help: "No licenses before this date (ISO 8601).") var notBefore: String?
    @Option(name: .customLong("not-after"), help: "No licenses after this date (ISO 8601).") var notAfter: String?
    @Option(name: .customLong("lease-seconds"), help: "FairPlay lease duration.") var leaseSeconds: UInt32?
    @Option(name: .customLong("rental-seconds"), help: "Rental: validity after acquisition (FairPlay rental; Satchel licenses).") var rentalSeconds: UInt32?
    @Flag(help: "FairPlay keys may be persisted (needs --offline).") var persist = false
    @Option(name: .customLong("persist-seconds"), help: "Validity of a persisted FairPlay key.") var persistSeconds: UInt32?
    @Option(name: .customLong("offline-content-id"), help: "Dual expiry on (32 hex digits; each download then gets a content ID of its own).") var offlineContentID: String?
    @Option(name: .customLong("storage-seconds"), help: "Dual expiry: storage duration.") var storageSeconds: UInt32?
    @Option(name: .customLong("playback-seconds"), help: "Playback window after first use (Satchel licenses; FairPlay dual expiry).") var playbackSeconds: UInt32?
    @Option(name: .customLong("renewal-seconds"), help: "Satchel licenses: renew this often; each renewal starts the rental again (default: not renewable).") var renewalSeconds: UInt32?
    @Option(help: "HDCP requirement: none, type0 or type1.") var hdcp: HDCPRequirementArgument?
    @Flag(name: .customLong("allow-airplay"), help: "Allow AirPlay and AV adapter output.") var allowAirPlay = false
    @Flag(help: "Allow persistent (offline) licenses.") var offline = false

    func policy() throws -> AssetPolicy {
        func date(_ text: String?, _ name: String) throws -> Date? {
            guard let text else { return nil }
            guard let value = ISODate.date(text) else { throw CLIError("\(name): expected an ISO 8601 date such as 2027-01-31 or 2027-01-31T12:00:00Z") }
            return value
        }
        if persistSeconds != nil && !persist { throw CLIError("--persist-seconds needs --persist") }
        if let offlineContentID { _ = try hexOption(offlineContentID, count: 16, name: "--offline-content-id") }
        return AssetPolicy(notBefore: try date(notBefore, "--not-before"), notAfter: try date(notAfter, "--not-after"),
                           leaseSeconds: leaseSeconds, rentalSeconds: rentalSeconds, persist: persist, persistSeconds: persistSeconds,
                           offlineContentID: offlineContentID, storageSeconds: storageSeconds, playbackSeconds: playbackSeconds,
                           hdcp: hdcp?.value, allowAirPlay: allowAirPlay, offline: offline, renewalSeconds: renewalSeconds)
    }
}

/// `--hdcp none|type0|type1` (kept apart from the FairPlay type so the option can be optional here too).
struct HDCPRequirementArgument: ExpressibleByArgument {
    let value: SatchelFairPlayHDCP
    init?(argument: String) {
        guard let value = SatchelFairPlayHDCP(rawValue: argument) else { return nil }
        self.value = value
    }
}
