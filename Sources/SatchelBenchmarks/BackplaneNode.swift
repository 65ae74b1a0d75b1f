import Foundation
import Logging
import SatchelBackplane
import SatchelBytes
import SatchelHTTP
import SatchelLicensing
import SatchelServer
import ServiceLifecycle

/// One backplane node for `SatchelBenchmarks backplane`, in its own process (so that its memory is its own and two
/// nodes are two processes, as two `satchel serve` would be): the license service without entitlement tokens, device
/// registration, the backplane with its operator API, on SQLite in `directory` or on PostgreSQL at `url`. Prints
/// `ready PORT` once listening.
enum BackplaneNode {
    /// `backplane-node DIRECTORY KEK-HEX OPERATOR-KEY [POSTGRES-URL]`.
    static func run(_ arguments: [String]) async -> Int32 {
        guard arguments.count >= 3 else { return 2 }
        let (directory, kekHex, operatorKey) = (arguments[0], arguments[1], arguments[2])
        let url = arguments.count > 3 ? arguments[3] : nil
        var logger = Logger(label: "satchel.bench.node")
        logger.logLevel = .error
        do {
            let database = try await LicensingDatabase(dataDirectory: directory, url: url, more: BackplaneMigrations.all, files: [SyncTimesTable.file], logger: logger)
            let kek = try KeyEncryptionKey(try SecretBytes(hex: kekHex, count: 32))
            let service = LicenseService(store: FluentKeyStore(database: database, kek: kek), ksm: nil, verifier: nil)
            let devices = DeviceLicensing(service: service, registry: DeviceRegistry(database: database.database, kek: kek))
            let hub = BackplaneWakeHub(), store = FluentBackplaneStore(database: database.database, readers: database.readers,
                                                                           syncTimes: database.database(of: SyncTimesTable.file))
            let backplane = BackplaneService(store: store, slots: FluentStreamSlots(database: database.database),
                                         events: FluentEventStore(database: try database.sql()),
                                         feeds: FluentFeedStore(database: database.database),
                                         hub: hub, licensing: devices,
                                             sessions: try AdminSessions(operatorKey: SecretBytes(Array(operatorKey.utf8))))
            var services: [any Service] = []
            if let url {
                let listener = try PostgresWakeListener(url: url, hub: hub, logger: logger)
                services.append(BackgroundService(name: "listener") { await listener.run() })
            }
            _ = ConnectionLimits.raiseDescriptorLimit()
            let app = LicenseServer.application(service: service, devices: devices, backplane: backplane, certificate: nil, port: 0,
                                                connections: ConnectionRegistry(limits: ConnectionLimits(maxConnections: 4096)),
                                                services: services, logger: logger, onServerRunning: { channel in
                                                    print("ready \(channel.localAddress?.port ?? 0)")
                                                })
            try await app.runService()
            try? await store.flush()
            await database.shutdown()
            return 0
        } catch {
            FileHandle.standardError.write(Data("backplane-node: \(error)\n".utf8))
            return 1
        }
    }
}
