import ArgumentParser
import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import SatchelBackplane
import SatchelBytes
import SatchelFairPlay
import SatchelHTTP
import SatchelLicensing
import SatchelServer
import SatchelSystem
#if canImport(Glibc)
import Glibc
private let systemBind = Glibc.bind
#elseif canImport(Darwin)
import Darwin
private let systemBind = Darwin.bind
#endif

/// `satchel serve`: the license service.
struct ServeCommand: SatchelAsyncCommand {
    static let configuration = CommandConfiguration(commandName: "serve", abstract: "Serve Satchel device licenses, FairPlay, Clear Key and AES-128 keys, and signed time.")

    @OptionGroup var store: StoreOptions
    @Option(help: "Port (default: $SATCHEL_PORT or 8080); 0 takes any free port. The address listened on is printed once bound.") var port: Int?
    @Option(help: "A folder of packages to publish under /content/ as a CDN would (ranges, ETag, CORS; key files never).") var origin: String?
    @Option(help: "Address to listen on (default: $SATCHEL_BIND or 127.0.0.1).") var bind: String?
    @Option(name: .customLong("fps-certificate"), help: "FairPlay Application Certificate (DER); repeat for several.") var certificates: [String] = []
    @Option(name: .customLong("fps-private-key"), help: "Its private key (PEM); one per certificate.") var privateKeys: [String] = []
    @Option(name: .customLong("fps-dask"), help: "Development DASk (hex); the first certificates use these.") var dasks: [String] = []
    @Option(name: .customLong("fps-ask"), help: "Production ASk (hex); the remaining certificates use these.") var asks: [String] = []
    @Option(help: "JSON Web Key Set that verifies entitlement tokens (HS256 oct, ES256, RS256 keys); or $SATCHEL_JWKS.") var jwks: String?

    private var environment: [String: String] { ProcessInfo.processInfo.environment }
    private var jwksPath: String? { jwks ?? environment["SATCHEL_JWKS"] }
    @Flag(name: .customLong("require-offline-capability"),
          help: "Send an Offline Key TLLV only to clients whose SPC announces the capability (default: as Apple's reference KSM).")
    var requireOfflineCapability = false
    @Flag(name: .customLong("insecure-no-entitlement"), help: "Development only: issue licenses without entitlement tokens.") var insecure = false
    @Option(name: .customLong("header-timeout"), help: "Seconds a request head may take to arrive (default 10).") var headerTimeout: Double = 10
    @Option(name: .customLong("idle-timeout"), help: "Seconds a kept-alive connection may stay idle (default 60).") var idleTimeout: Double = 60
    @Option(name: .customLong("max-connections"), help: "Connections served at once (default: from the descriptor limit).") var maxConnections: Int?
    @Option(name: .customLong("max-connections-per-address"),
            help: "Connections one client address may hold at once (default: a quarter of --max-connections, at least 8; behind a proxy, raise it to --max-connections).")
    var maxConnectionsPerAddress: Int?
    @Option(name: .customLong("max-streams"),
            help: "Devices' event streams open at once, beside --max-connections (default: a quarter of it, at least 16).") var maxStreams: Int?
    @Option(name: .customLong("retain-audit"), help: "Days the audit (licenses issued, FairPlay sync reports) is kept; older records are deleted every hour (default: kept for ever).")
    var retainAudit: Int?
    @Option(name: .customLong("retain-events"), help: "Days the devices' events are kept; older events are deleted every hour (default: kept for ever).")
    var retainEvents: Int?
    @Option(name: .customLong("device-events-per-hour"),
            help: "Events one device may send an hour (and at once); past it the device is told to send them again later (default 5000, at least 500).")
    var deviceEventsPerHour = 5_000
    @Option(name: .customLong("stall-report"), help: ArgumentHelp("Log a warning, with what every thread was doing, whenever an event loop or the task pool does not run for this many milliseconds (50 to 60000).", valueName: "ms"))
    var stallReport: Int?
    @Option(name: .customLong("loop-priority"),
            help: ArgumentHelp("Run the event loops, which answer every connection, this many nice levels above the rest of the process (0 to 20; default 0: left as they are). For a host shared with bulk work (encodes, packaging): the loops then answer soon however busy the machine. Not for a server its own requests saturate: the loops then take more than the work behind them can finish, and answers wait longer. Needs root or CAP_SYS_NICE; without it the log says the loops were left.", valueName: "levels"))
    var loopPriority: Int32 = 0
    @Option(name: .customLong("token-audience"), help: "Entitlement tokens must carry this aud (or $SATCHEL_TOKEN_AUDIENCE).") var audience: String?
    @OptionGroup var logging: LoggingOptions
    @Option(name: .customLong("demo-tokens"), help: .hidden) var demoTokenKID: String?
    @Option(name: .customLong("operator-key-file"),
            help: "A file holding the operator key (16 bytes or more) that signs in to the dashboard at /admin; or $SATCHEL_OPERATOR_KEY_FILE. Without it there is no dashboard.")
    var operatorKeyFile: String?
    @Option(name: .customLong("backplane-heartbeat"), help: .hidden) var heartbeat: Double = 15
    @Option(name: .customLong("token-issuer"), help: "Entitlement tokens must carry this iss (or $SATCHEL_TOKEN_ISSUER).") var issuer: String?
    @Option(name: .customLong("policy-hook"),
            help: "An http(s) endpoint asked before each license (POST of the license's type, asset, user, custom data and rights as JSON; it answers {\"issue\": true} or {\"issue\": false, \"reason\": \"…\"}). No answer: no license.")
    var policyHook: String?
    @Option(name: .customLong("policy-hook-timeout"), help: "Seconds the policy hook may take (default 2).") var policyHookTimeout: Double = 2
    @Option(name: .customLong("tls-certificate"),
            help: "Serve HTTPS (HTTP/2 offered by ALPN) with this PEM certificate chain; read again, with --tls-key, on SIGHUP.")
    var tlsCertificate: String?
    @Option(name: .customLong("tls-key"), help: "The PEM private key of --tls-certificate.") var tlsKey: String?

    func validate() throws {
        guard certificates.count == privateKeys.count, certificates.count == dasks.count + asks.count else {
            throw ValidationError("give one --fps-private-key and one --fps-dask or --fps-ask per --fps-certificate")
        }
        guard (0.1...3600).contains(headerTimeout), (0.1...86_400).contains(idleTimeout), (maxConnections ?? 1) >= 1, (maxConnectionsPerAddress ?? 1) >= 1, (maxStreams ?? 1) >= 1,
              (0.1...3600).contains(heartbeat) else {
            throw ValidationError("--header-timeout 0.1 to 3600 s, --idle-timeout 0.1 to 86400 s, --max-connections, --max-connections-per-address and --max-streams at least 1")
        }
        guard (0.05...60).contains(policyHookTimeout) else { throw ValidationError("--policy-hook-timeout is 0.05 to 60 s") }
        guard jwksPath != nil || insecure else { throw ValidationError("give --jwks (or $SATCHEL_JWKS), or --insecure-no-entitlement for local testing") }
        if demoTokenKID != nil && jwksPath == nil { throw ValidationError("--demo-tokens signs with a key of --jwks") }
        if (tlsCertificate == nil) != (tlsKey == nil) { throw ValidationError("--tls-certificate and --tls-key go together") }
        for (name, days) in [("--retain-audit", retainAudit), ("--retain-events", retainEvents)] where days.map({ !(1...36_500).contains($0) }) ?? false {
            throw ValidationError("\(name) is a number of days from 1 to 36500")
        }
        if !(EventRules.batchLimit...10_000_000).contains(deviceEventsPerHour) {
            throw ValidationError("--device-events-per-hour is \(EventRules.batchLimit) (a batch) to 10000000")
        }
        if let stallReport, !(50...60_000).contains(stallReport) { throw ValidationError("--stall-report is 50 to 60000 milliseconds") }
        if !(0...20).contains(loopPriority) { throw ValidationError("--loop-priority is 0 to 20 nice levels") }
    }

    func execute() async throws {
        try await run(whenListening: { url in
            print("listening on \(url)")
            fflush(nil)  // out now: a pipe would hold it back
        })
    }

    /// Serves until stopped; `whenListening` runs once the port is bound, with the address listened on (what
    /// `satchel demo` prints waits for it; with port 0 it names the port the system chose).
    func run(whenListening: @escaping @Sendable (_ url: String) -> Void) async throws {
        let files: OriginFiles?
        do { files = try origin.map { try OriginFiles(folder: $0) } } catch { throw CLIError("--origin: \(error)") }
        try logging.bootstrap(fallback: .info)
        let logger = Logger(label: "satchel.serve")
        let watchdog = stallReport.map { StallWatchdog.logging(limit: .milliseconds($0), to: Logger(label: "satchel.stalls")) }
        defer { watchdog?.stop() }
        await raiseLoops(logger: logger)
        let tls = try tlsIdentity(logger: logger)  // before the database opens: a bad certificate stops here
        let scheme = tls == nil ? "http" : "https"
        var credentials: [FairPlayCredential] = []
        for (index, path) in certificates.enumerated() {
            let function: any DFunction
            do {
                function = index < dasks.count ? try DevelopmentDFunction(dask: SecretBytes(hex: dasks[index], count: 16))
                    : try ProductionDFunction(ask: SecretBytes(hex: asks[index - dasks.count], count: 16))
            } catch {
                throw CLIError("--fps-dask / --fps-ask must be 32 hex digits")
            }
            credentials.append(try FairPlayCredential(certificate: FileIO.read(path, what: "certificate"),
                                                      privateKey: FileIO.read(privateKeys[index], what: "private key"), dFunction: function))
        }
        var verifier: EntitlementVerifier?
        var demoTokens: DemoTokens?
        if let jwksPath {
            let jwks = Data(try FileIO.read(jwksPath, what: "JWKS"))
            verifier = try await EntitlementVerifier(jwks: jwks, audience: audience ?? environment["SATCHEL_TOKEN_AUDIENCE"],
                                                     issuer: issuer ?? environment["SATCHEL_TOKEN_ISSUER"])
            if let kid = demoTokenKID {
                logger.warning("DEMO: /demo/token/{assetId} gives an entitlement token to anyone who asks. Never use this in production.")
                let signer = try await EntitlementVerifier(jwks: jwks)
                demoTokens = DemoTokens { asset in
                    let claims = Entitlement(subject: "demo-viewer", asset: asset, expires: Date().addingTimeInterval(3600), persistent: true)
                    return (try await signer.sign(claims, kid: kid), claims.exp.value)
                }
            }
        } else {
            logger.warning("INSECURE: --insecure-no-entitlement: licenses are issued to anyone who asks. Never use this in production.")
        }
        let (keyStore, database) = try await store.open()
        let ksm = credentials.isEmpty ? nil : KeySecurityModule(configuration: .init(credentials: credentials,
                                                                                                 requireOfflineKeyCapability: requireOfflineCapability))
        var service = LicenseService(store: keyStore, ksm: ksm, verifier: verifier)
        // FairPlay: rentals bound to the device that leased them, each download's offline key, and leases taking
        // stream slots of the account (the backplane's, in the same database); a persistent Satchel license takes the
        // device's download permission (the backplane's limits, enforced where the license is issued).
        let slots = FluentStreamSlots(database: database.database)
        let backplaneStore = FluentBackplaneStore(database: database.database, readers: database.readers, syncTimes: database.database(of: SyncTimesTable.file))
        service.fairPlayRecords = FluentFairPlayRecords(database: database.database)
        service.leaseSlots = BackplaneService.leaseSlots(slots)
        service.offlineGrants = BackplaneService.offlineGrants(backplaneStore)
        if let policyHook { service.policyHook = try WebhookPolicyHook(url: policyHook, timeout: .milliseconds(Int(policyHookTimeout * 1000))) }
        let host = bind ?? environment["SATCHEL_BIND"] ?? "127.0.0.1"
        if demoTokens != nil, !["127.0.0.1", "::1", "localhost"].contains(host) { throw CLIError("--demo-tokens serves only on a loopback address") }
        guard let port = port ?? Int(environment["SATCHEL_PORT"] ?? "8080"), (0...65535).contains(port) else {
            throw CLIError("the port must be 0 (any free port) to 65535")
        }
        ConnectionLimits.raiseDescriptorLimit()
        let limits = ConnectionLimits(headerTimeout: .milliseconds(Int(headerTimeout * 1000)), idleTimeout: .milliseconds(Int(idleTimeout * 1000)),
                                      maxConnections: maxConnections, maxConnectionsPerAddress: maxConnectionsPerAddress, maxStreams: maxStreams)
        let connections = ConnectionRegistry(limits: limits)
        // The database closes inside ServiceLifecycle, after the server has stopped taking requests.
        let registry = try store.registry(database)
        let devices = DeviceLicensing(service: service, registry: registry)
        var web: WebAssets?
        do { web = try WebAssets() } catch { logger.warning("no browser player, no dashboard and no /openapi.json: \(error)") }
        var sessions: AdminSessions?
        if let path = operatorKeyFile ?? environment["SATCHEL_OPERATOR_KEY_FILE"] {
            sessions = try AdminSessions(operatorKey: try AdminSessions.operatorKey(file: path))
        }
        let hub = BackplaneWakeHub()
        let backplane = BackplaneService(store: backplaneStore, slots: slots,
                                         events: FluentEventStore(database: try database.sql()),
                                         feeds: FluentFeedStore(database: database.database), hub: hub, licensing: devices,
                                         sessions: sessions, heartbeat: .milliseconds(Int(heartbeat * 1000)),
                                         eventQuota: EventQuota(eventsPerHour: deviceEventsPerHour), connections: connections)
        let admin = sessions.map { AdminConsole(sessions: $0, service: service, registry: registry, backplane: backplane) }
        let retention = HistoryRetention(auditDays: retainAudit, eventDays: retainEvents)
        let (auditSQL, eventSQL) = (try database.auditSQL(), try database.sql())
        var lifecycle: [any Service] = [BackgroundService(name: "history retention") { await retention.run(audit: auditSQL, events: eventSQL) }]
        if let url = store.resolvedDatabaseURL {  // other nodes' changes reach this node's streams
            let listener = try PostgresWakeListener(url: url, hub: hub, logger: logger)
            lifecycle.append(BackgroundService(name: "backplane listener") { await listener.run() })
        }
        let app = LicenseServer.application(service: service, devices: devices, backplane: backplane, origin: files, web: web, admin: admin, demoTokens: demoTokens, certificate: credentials.first?.certificate, host: host, port: port,
                                            connections: connections,
                                            services: lifecycle + [LifecycleService(name: "key store") {
                                                // The devices' last sync times noted by the final requests, then the database.
                                                do { try await backplaneStore.flush() } catch { logger.warning("\(error)") }
                                                await database.shutdown()
                                            }], tls: tls,
                                            logger: logger,
                                            onServerRunning: { channel in
                                                whenListening(Self.address(scheme: scheme, host: host, port: channel.localAddress?.port ?? port))
                                            })
        logger.info("\(BuildInfo.line) serve on \(scheme)://\(host):\(port) (\(database.kind) key store, \(credentials.count) FairPlay credential(s)\(files == nil ? "" : ", origin /content/"))")
        // SIGHUP reads the certificate and key again (a renewed certificate, no restart).
        let reload = tls.map { identity in
            SignalWatch([SIGHUP]) { _ in
                do {
                    try identity.reload()
                    let (expires, serial) = identity.summary
                    logger.notice("TLS certificate reloaded", metadata: ["serial": "\(serial)", "expires": "\(ISODate.string(expires))"])
                } catch {
                    logger.error("TLS certificate not reloaded; the previous one stays in use: \(error)")
                }
            }
        }
        defer { reload?.cancel() }
        do {
            try await app.runService()
        } catch {
            if let io = error as? IOError, io.errnoCode == EADDRINUSE { throw Self.busy(host: host, port: port) }
            throw error
        }
    }
}

extension ServeCommand {
    /// The address clients use: an IPv6 host in brackets.
    static func address(scheme: String = "http", host: String, port: Int) -> String {
        host.contains(":") ? "\(scheme)://[\(host)]:\(port)" : "\(scheme)://\(host):\(port)"
    }

    /// The TLS certificate and key, when asked for; says which certificate is in use.
    func tlsIdentity(logger: Logger) throws -> TLSIdentity? {
        guard let tlsCertificate, let tlsKey else { return nil }
        let identity: TLSIdentity
        do { identity = try TLSIdentity(certificateFile: tlsCertificate, keyFile: tlsKey) } catch { throw CLIError("TLS: \(error)") }
        let (expires, serial) = identity.summary
        logger.info("TLS certificate in use", metadata: ["serial": "\(serial)", "expires": "\(ISODate.string(expires))"])
        return identity
    }

    /// SwiftNIO's shared loops (the server's and its clients') raised `--loop-priority` levels; the log says how it went.
    func raiseLoops(logger: Logger) async {
        guard loopPriority > 0 else { return }
        let outcomes = await ThreadPriority.raiseLoops(by: loopPriority)
        switch outcomes.first {
        case .raised(let nice): logger.info("event loops raised above the process", metadata: ["loops": "\(outcomes.count)", "nice": "\(nice)"])
        case .notPermitted: logger.notice("event loops left at the process's priority: --loop-priority needs root or CAP_SYS_NICE (or leave it out)")
        case .unsupported, nil: break
        }
    }

    /// The one line a busy port gets.
    static func busy(host: String, port: Int) -> CLIError {
        CLIError("port \(port) on \(host) is already in use (another satchel serve or satchel demo?): stop it, or choose another with --port")
    }

    /// Throws ``busy(host:port:)`` when `port` cannot be bound on `host` now (checked before work that would be
    /// wasted: the server binds again when it starts).
    static func requireFree(host: String, port: Int) throws {
        #if os(Linux)
        let stream = Int32(SOCK_STREAM.rawValue)
        #else
        let stream = SOCK_STREAM
        #endif
        guard let portNumber = UInt16(exactly: port) else { return }
        let fd = socket(AF_INET, stream, 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(portNumber.bigEndian)
        address.sin_addr.s_addr = inet_addr(host == "localhost" ? "127.0.0.1" : host)
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { systemBind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if bound != 0, errno == EADDRINUSE { throw busy(host: host, port: port) }
    }
}
