import Foundation
import SatchelBytes
import SatchelFairPlay
import SatchelProtection

/// Issues keys and licenses: FairPlay CKCs, W3C Clear Key licenses and HLS AES-128 keys, each
/// only against a valid entitlement and within the asset's policy, and each recorded for audit.
public struct LicenseService: Sendable {
    /// The key store.
    public let store: any KeyStore
    /// The FairPlay KSM, when FairPlay credentials are configured.
    public let ksm: KeySecurityModule?
    /// The entitlement verifier; nil only in the insecure development mode.
    public let verifier: EntitlementVerifier?

    /// The clock for policy windows, token expiry and audit times.
    public let clock: any WallClock
    /// Rental bindings and offline keys (nil: neither is kept; rentals play on any device).
    public var fairPlayRecords: (any FairPlayRecording)?
    /// Where a FairPlay lease takes its stream slot (nil: no stream limit on leases).
    public var leaseSlots: (any LeaseSlots)?
    /// Where a persistent Satchel license takes the device's download permission (nil: no download limits).
    public var offlineGrants: (any OfflineGrants)?
    /// The operator's say on each license, with the request's custom data (nil: the token and the policy decide alone).
    public var policyHook: (any LicensePolicyHook)?

    /// Creates the service.
    public init(store: any KeyStore, ksm: KeySecurityModule?, verifier: EntitlementVerifier?, clock: any WallClock = SystemClock()) {
        self.store = store
        self.ksm = ksm
        self.verifier = verifier
        self.clock = clock
    }

    /// A FairPlay license: what the endpoint returns.
    public struct FairPlayLicense: Sendable {
        /// The CKC.
        public var ckc: [UInt8]
        /// The asset.
        public var assetID: String
        /// True when the SPC was a Sync SPC (recorded).
        public var wasSync: Bool
        /// The content ID of the download's offline key (32 hex digits) when the CKC carries dual expiry (the FairPlay
        /// Streaming Programming Guide:
        /// "the server should notify the app that the asset is using dual expiry"): the app may send Sync SPCs.
        public var offlineContentID: String?
    }

    /// Verifies the token (or, in development mode, lets every request through as "anonymous").
    public func entitlement(_ token: String?) async throws(LicensingError) -> Entitlement {
        guard let verifier else {
            return Entitlement(subject: "anonymous", asset: "*", expires: clock.now.addingTimeInterval(60), persistent: true)
        }
        guard let token, !token.isEmpty else { throw .missingEntitlement }
        return try await verifier.verify(token, now: clock.now)
    }

    /// The one offline rule, for every license type: a persistable FairPlay key, a dual-expiry Offline Key TLLV and a
    /// persistent Clear Key license go only to a token with `persistent: true`, for an asset whose policy allows
    /// offline use. (An HLS AES-128 key is a plain key: whoever holds one can keep it, so it has no offline form.)
    public static func allowsOffline(_ entitlement: Entitlement, _ policy: AssetPolicy) -> Bool {
        policy.offline && entitlement.persistent == true
    }

    private func authorize(_ entitlement: Entitlement, _ key: StoredKey, now: Date) throws(LicensingError) {
        guard entitlement.covers([key.assetID, key.fairPlayAssetID]) else {
            throw .notEntitled("the token is for asset \"\(entitlement.asset.prefix(100))\", not \"\(key.assetID)\"")
        }
        try key.policy.checkWindow(at: now)
    }

    /// Answers an SPC. `assetHint` (from the request body or the skd URI) is used when the SPC's asset ID is not text.
    /// The token is checked first; then the KSM runs every step of `KeySecurityModule/process(_:policy:)`, asking
    /// this service for the key and rights of the SPC's asset in between (and the policy hook, with `customData`); the
    /// license is recorded before it is returned.
    public func fairPlay(spc bytes: [UInt8], assetHint: String? = nil, token: String?, customData: String? = nil) async throws -> FairPlayLicense {
        guard let ksm else { throw LicensingError.configuration("FairPlay is not configured on this server (no --fps-certificate)") }
        let entitlement = try await entitlement(token)
        let now = clock.now
        var chosen: (key: StoredKey, policy: AssetPolicy)?
        let subject = entitlement.sub.value
        let response = try await ksm.process(bytes) { spc in
            let key = try await spcKey(spc.assetIDString ?? assetHint ?? Hex.encode(spc.assetID))
            try authorize(entitlement, key, now: now)
            var policy = key.policy.applying(entitlement.policy)
            if !Self.allowsOffline(entitlement, key.policy) {
                policy.persist = false
                policy.offlineContentID = nil
            }
            // Dual expiry: a content ID of its own for each download, so that its Sync SPCs name it alone (a Sync SPC's
            // answer keeps the ID it names).
            if policy.offlineContentID != nil {
                policy.offlineContentID = Hex.encode(spc.isSyncSPC ? spc.sync?.contentID ?? SecureRandom.bytes(16) : SecureRandom.bytes(16))
            }
            policy = try await consult(spc.isSyncSPC ? "fairplay-sync" : "fairplay", assetID: key.assetID, subject: subject, customData: customData,
                                       policy: policy)
            if !spc.isSyncSPC { try await bind(spc, subject: subject, asset: key.assetID, policy: policy, now: now) }
            chosen = (key, policy)
            return try policy.fairPlayPolicy(contentKey: key.key.key, iv: key.key.iv)
        }
        guard let (key, policy) = chosen else { throw LicensingError.configuration("the KSM answered without asking for a key") }
        let spc = response.spc
        if spc.isSyncSPC, let sync = spc.sync {
            try await store.recordSync(contentID: Hex.encode(sync.contentID), durationToExpiry: sync.durationToExpiry, subject: subject, at: now)
            _ = try await fairPlayRecords?.synced(contentID: Hex.encode(sync.contentID), durationToExpiry: sync.durationToExpiry, subject: subject, at: now)
        }
        if let contentID = policy.offlineContentID, !spc.isSyncSPC {
            try await fairPlayRecords?.recordOfflineKey(OfflineKeyRecord(contentID: contentID, assetID: key.assetID, subject: subject, device: Hex.encode(spc.session.hu),
                                                                         issued: now, storageSeconds: policy.storageSeconds ?? 0,
                                                                         playbackSeconds: policy.playbackSeconds ?? 0))
        }
        try await store.recordLicense(assetID: key.assetID, keyID: key.key.keyID.hex, subject: subject,
                                      type: spc.isSyncSPC ? "fairplay-sync" : "fairplay", customData: customData, at: now)
        return FairPlayLicense(ckc: response.ckc, assetID: key.assetID, wasSync: spc.isSyncSPC, offlineContentID: policy.offlineContentID)
    }

    /// What a license binds before its CKC is made (the FairPlay Streaming Programming Guide, "Secure Lease",
    /// "Simultaneous Renting and Leasing"): a
    /// combined rental and lease to the device that leased it first (another refused while the rental lasts), and a
    /// lease to a stream slot of the account (taken or renewed; refused over its stream limit).
    private func bind(_ spc: SPC, subject: String, asset: String, policy: AssetPolicy, now: Date) async throws {
        let device = Hex.encode(spc.session.hu)
        if FairPlayLeaseRules.bindsRental(leaseSeconds: policy.leaseSeconds, rentalSeconds: policy.rentalSeconds, toDevice: spc.streamingTarget != .avAdapter),
           let rental = policy.rentalSeconds {
            try await fairPlayRecords?.bindRental(subject: subject, asset: asset, device: device, until: now.addingTimeInterval(TimeInterval(rental)), at: now)
        }
        if let lease = policy.leaseSeconds { try await leaseSlots?.lease(subject: subject, device: device, asset: asset, seconds: lease, at: now) }
    }

    /// The key for an asset ID taken from an SPC. The ID was decrypted from the SPC, so an unknown one is
    /// never echoed back (a tampered SPC decrypts to noise).
    private func spcKey(_ asset: String) async throws(LicensingError) -> StoredKey {
        do {
            return try await store.key(asset: asset)
        } catch {
            guard case .unknownAsset = error else { throw error }
            throw .unknownAsset("named by the SPC")
        }
    }

    /// Answers a W3C Clear Key license request with the keys the token entitles (the JSON Web Key Set).
    public func clearKey(_ request: ClearKey.Request, token: String?) async throws -> [UInt8] {
        try await clearKeyLicense(request, token: token).body
    }

    /// A Clear Key license and until when it is valid.
    public struct ClearKeyLicense: Sendable {
        /// The license: a JSON Web Key Set (secret).
        public var body: [UInt8]
        /// The earliest of the token's expiry, each key's not-after and the lease (policy or token) from now.
        public var expires: Date
    }

    /// Answers a W3C Clear Key license request with the keys the token entitles (each asked of the policy hook, with
    /// `customData`), and the license's expiry.
    public func clearKeyLicense(_ request: ClearKey.Request, token: String?, customData: String? = nil) async throws -> ClearKeyLicense {
        let entitlement = try await entitlement(token)
        let now = clock.now
        var keys: [(key: StoredKey, policy: AssetPolicy)] = []
        for keyID in request.keyIDs {
            let key = try await store.key(id: keyID)
            try authorize(entitlement, key, now: now)
            if request.type == "persistent-license", !Self.allowsOffline(entitlement, key.policy) {
                guard key.policy.offline else { throw LicensingError.policyDenied("persistent licenses are not allowed for \(key.assetID)") }
                throw LicensingError.notEntitled("the token does not allow persistent licenses")
            }
            let policy = try await consult("clearkey-\(request.type)", assetID: key.assetID, subject: entitlement.sub.value, customData: customData,
                                           policy: key.policy.applying(entitlement.policy))
            keys.append((key, policy))
        }
        for (key, _) in keys {
            try await store.recordLicense(assetID: key.assetID, keyID: key.key.keyID.hex, subject: entitlement.sub.value,
                                          type: "clearkey-\(request.type)", customData: customData, at: now)
        }
        var expires = entitlement.exp.value
        for (_, policy) in keys {
            if let notAfter = policy.notAfter { expires = min(expires, notAfter) }
            if let lease = policy.leaseSeconds { expires = min(expires, now.addingTimeInterval(TimeInterval(lease))) }
        }
        return ClearKeyLicense(body: ClearKey.response(keys: keys.map { ($0.key.key.keyID, $0.key.key.key) }, type: request.type), expires: expires)
    }

    /// The raw 16-byte key for HLS AES-128 (`GET /keys/{keyId}`), when the token and the policy hook (with
    /// `customData`) allow it.
    public func aes128Key(_ keyID: KeyID, token: String?, customData: String? = nil) async throws -> [UInt8] {
        let entitlement = try await entitlement(token)
        let now = clock.now
        let key = try await store.key(id: keyID)
        try authorize(entitlement, key, now: now)
        _ = try await consult("aes-128", assetID: key.assetID, subject: entitlement.sub.value, customData: customData,
                              policy: key.policy.applying(entitlement.policy))
        try await store.recordLicense(assetID: key.assetID, keyID: keyID.hex, subject: entitlement.sub.value, type: "aes-128", customData: customData, at: now)
        return key.key.key.bytes
    }
}
