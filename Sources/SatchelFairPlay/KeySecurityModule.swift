import Foundation
import SatchelBytes

/// The FairPlay Streaming Key Security Module: SPC in, CKC out.
///
/// Pure value logic: the caller supplies the time and, through a closure, the key and policy
/// for the SPC's asset (a key store lookup in a server). Safe to share between tasks.
public struct KeySecurityModule: Sendable {
    /// KSM settings.
    public struct Configuration: Sendable {
        /// Credentials; the SPC's certificate hash selects one.
        public var credentials: [FairPlayCredential]
        /// The protocol versions a KSM supports unless told otherwise; a FairPlay playlist's `KEYFORMATVERSIONS`
        /// lists them (guide "Protocol Version Blocks": the playlist names the versions the key server supports).
        public static let defaultSupportedVersions: [UInt32] = [1]
        /// Protocol versions this server supports.
        public var supportedVersions: [UInt32]
        /// Refuse SPCs whose used version is older than the best common version.
        public var rejectDowngrade: Bool
        /// Maximum distance in seconds between the SPC creation date and the server clock; nil = no check.
        public var maxSPCAge: UInt32?
        /// The offline-key rule. As Apple's reference KSM does, an SPC without a Capabilities TLLV (devices before
        /// iOS 11 never send one) gets the Offline Key TLLV the policy asks for, and only an SPC whose Capabilities
        /// TLLV lacks the offline-key bit is refused. With this set, an SPC must announce the capability.
        public var requireOfflineKeyCapability: Bool
        /// CKC construction settings.
        public var builder: CKCBuilder
        /// The server's clock (the SPC creation-date window).
        public var clock: any WallClock
        /// SHA-1 hashes (hex) of Application Certificates that are revoked: their SPCs are refused (-42783).
        public var revokedCertificates: Set<String> = []

        /// Creates a configuration.
        public init(credentials: [FairPlayCredential], supportedVersions: [UInt32] = defaultSupportedVersions, rejectDowngrade: Bool = false,
                    maxSPCAge: UInt32? = nil, requireOfflineKeyCapability: Bool = false, builder: CKCBuilder = CKCBuilder(),
                    clock: any WallClock = SystemClock()) {
            self.clock = clock
            self.credentials = credentials
            self.supportedVersions = supportedVersions
            self.rejectDowngrade = rejectDowngrade
            self.maxSPCAge = maxSPCAge
            self.requireOfflineKeyCapability = requireOfflineKeyCapability
            self.builder = builder
        }
    }

    /// The answer to one SPC.
    public struct Response: Sendable {
        /// The CKC bytes to send to the device.
        public let ckc: [UInt8]
        /// The parsed SPC.
        public let spc: SPC
        /// Protocol version negotiation outcome.
        public let versions: VersionNegotiation
        /// What the CKC carries (no secrets).
        public let summary: CKCBuilder.Summary
        /// The sync values when this was a Sync SPC.
        public var sync: SyncInfo? { spc.isSyncSPC ? spc.sync : nil }
    }

    /// The settings.
    public let configuration: Configuration
    private let parser: SPCParser

    /// Creates a KSM.
    public init(configuration: Configuration) {
        self.configuration = configuration
        self.parser = SPCParser(credentials: configuration.credentials)
    }

    /// Decrypts and integrity-checks an SPC (steps 1-6), without policy checks; an SPC of a revoked certificate
    /// is refused before anything is decrypted.
    public func parse(_ spcBytes: [UInt8]) throws(FairPlayError) -> SPC {
        if !configuration.revokedCertificates.isEmpty {  // before any decryption
            let hash = Hex.encode(try SPCParser.readHeader(spcBytes).0.certificateHash)
            if configuration.revokedCertificates.contains(hash) { throw .certificateRevoked(hashHex: hash) }
        }
        return try parser.parse(spcBytes)
    }

    /// Runs the protocol checks: versions and the SPC creation date window.
    public func check(_ spc: SPC, now: Date) throws(FairPlayError) -> VersionNegotiation {
        let versions = try VersionNegotiation.negotiate(
            deviceSupported: spc.supportedVersions, deviceUsed: spc.usedVersion,
            server: configuration.supportedVersions, rejectDowngrade: configuration.rejectDowngrade)
        if let window = configuration.maxSPCAge, let created = spc.playbackState?.creationDate {
            let serverTime = Int64(now.timeIntervalSince1970.rounded(.down))
            if abs(serverTime - Int64(created)) > Int64(window) {
                throw .spcCreationDateOutOfWindow(created: created, now: UInt32(clamping: serverTime), window: window)
            }
        }
        return versions
    }

    /// Applies the policy hooks that depend on the SPC (streaming target, client capabilities).
    public func authorize(_ spc: SPC, policy: ContentKeyPolicy) throws(FairPlayError) {
        let target = spc.streamingTarget
        guard policy.streaming.allows(target) else { throw .streamingTargetNotAllowed(target) }
        if policy.offlineKey != nil, spc.capabilities?.offlineKey == false || (configuration.requireOfflineKeyCapability && spc.capabilities == nil) {
            throw .clientLacksCapability("the Offline Key TLLV (dual expiry)")
        }
    }

    /// Processes one SPC end to end, every step in order: parse (steps 1-6), the protocol checks at the
    /// configured clock's time, `policy` (the server's key lookup, entitlement and rights for the parsed SPC;
    /// its error is passed through unchanged), the policy hooks, the CKC. A license server calls this and
    /// nothing else, so a step added here is never skipped.
    public func process(_ spcBytes: [UInt8], policy: (SPC) async throws -> ContentKeyPolicy) async throws -> Response {
        let spc = try parse(spcBytes)
        let versions = try check(spc, now: configuration.clock.now)
        let chosen = try await policy(spc)
        try authorize(spc, policy: chosen)
        let (ckc, summary) = try configuration.builder.buildWithSummary(for: spc, policy: chosen)
        return Response(ckc: ckc, spc: spc, versions: versions, summary: summary)
    }
}
