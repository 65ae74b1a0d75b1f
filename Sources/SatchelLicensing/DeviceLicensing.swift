import Crypto
import Foundation
import SatchelBytes
import SatchelProtection
import SatchelRights

/// Satchel's own device licenses (the server half of `SatchelAgent`): device registration with a signed
/// certificate, licenses whose content keys are sealed to the device key, renewal, release and signed time.
/// Every request after registration is signed by the device key and carries the server's certificate for it.
public struct DeviceLicensing: Sendable {
    /// Tokens, keys, policies and the clock.
    public let service: LicenseService
    /// Devices and their licenses.
    public let registry: DeviceRegistry

    /// How far a device request's time may be from the server's, ahead or behind: a request outside this window is
    /// refused (`clock-skew`; the agent dates its requests by the server's signed time, and asks for it again when
    /// refused), so a request cannot be made for later use, nor kept and sent once its nonce is forgotten.
    public static let allowedSkew: TimeInterval = 300
    /// How long request nonces are remembered: longer than the whole window a request's time is accepted in (a
    /// request seen at the start of its window cannot be sent again at its end).
    public static let nonceRetention: TimeInterval = 2 * allowedSkew + 60

    /// Creates the service.
    public init(service: LicenseService, registry: DeviceRegistry) {
        self.service = service
        self.registry = registry
    }

    /// Registers a device key for the token's user; answers the device and its certificate. An empty external ID is
    /// none (it names no device of the app).
    public func register(_ key: PublicKeyJWK, token: String?, name: String?, externalID: String?) async throws(LicensingError) -> (device: DeviceRecord, certificate: String) {
        let externalID = externalID.flatMap { $0.isEmpty ? nil : $0 }
        let entitlement = try await service.entitlement(token)
        do { _ = try key.signingKey() } catch { throw .badRequest(error.description) }
        for (field, value) in [("name", name), ("externalID", externalID)] where (value?.utf8.count ?? 0) > 200 {
            throw .badRequest("\(field) is at most 200 bytes")
        }
        let device = try await registry.register(key, subject: entitlement.sub.value, name: name, externalID: externalID, at: service.clock.now)
        let claims = DeviceCertificateClaims(deviceID: device.deviceID, user: device.subject, key: device.publicKey, issued: service.clock.now)
        return (device, try await sign(claims))
    }

    /// Issues a license for the asset (or key IDs) a signed device request names.
    public func acquire(_ request: String, token: String?, renewalURL: String?) async throws(LicensingError) -> String {
        let entitlement = try await service.entitlement(token)
        let (claims, device) = try await verify(request, subject: entitlement.sub.value)
        guard !device.disabled else { throw .deviceDisabled }
        let keys = try await keys(for: claims)
        guard let first = keys.first else { throw .unknownAsset(claims.assetID ?? "(no asset)") }
        guard entitlement.covers([first.assetID, first.fairPlayAssetID]) else {
            throw .notEntitled("the token is for asset \"\(entitlement.asset.prefix(100))\", not \"\(first.assetID)\"")
        }
        if claims.persistent == true, !LicenseService.allowsOffline(entitlement, first.policy) {
            guard first.policy.offline else { throw .policyDenied("persistent licenses are not allowed for \(first.assetID)") }
            throw .notEntitled("the token does not allow persistent licenses")
        }
        let policy = try await service.consult("satchel", assetID: first.assetID, subject: device.subject, customData: claims.customData,
                                               policy: first.policy.applying(entitlement.policy))
        let rights = try rights(policy, entitlement, persistent: claims.persistent == true)
        if rights.persistent { try await service.offlineGrants?.grant(device: device.deviceID, user: device.subject, asset: first.assetID) }
        let licenseID = SecureRandom.uuidV7(at: service.clock.now).uuidString.lowercased()  // time-ordered: the listing's order
        let now = service.clock.now
        try await registry.recordIssued(DeviceLicenseRecord(licenseID: licenseID, deviceID: device.deviceID, subject: device.subject,
                                                            assetID: first.assetID, persistent: rights.persistent, state: .active,
                                                            rights: rights, issuedAt: now, customData: claims.customData))
        try await service.store.recordLicense(assetID: first.assetID, keyID: first.key.keyID.hex, subject: device.subject, type: "satchel",
                                              customData: claims.customData, at: now)
        return try await license(licenseID, device: device, assetID: first.assetID, keys: keys, rights: rights,
                                 renewalURL: renewalURL, nonce: claims.nonce)
    }

    /// Renews a license within the asset's current policy, when the policy names a renewal interval: its validity
    /// starts again now, dates stay as the policy says. A license that has ended (its validity run out since it was
    /// issued or last renewed, or its end date passed) is never renewed: the device acquires a new one.
    public func renew(_ request: String, token: String?, renewalURL: String?) async throws(LicensingError) -> String {
        let entitlement = try await service.entitlement(token)
        let (claims, device) = try await verify(request, subject: entitlement.sub.value)
        guard !device.disabled else { throw .deviceDisabled }
        let record = try await owned(claims, device)
        guard record.state != .released else { throw .policyDenied("the license was released") }
        let now = service.clock.now
        if let ended = record.rights.effectiveEnd(RightsUsage(acquired: record.renewedAt ?? record.issuedAt)), ended <= now {
            throw .policyDenied("the license of \(record.assetID) ended at \(ISODate.string(ended)); acquire a new one")
        }
        let keys = try await keys(asset: record.assetID)
        guard let first = keys.first else { throw .unknownAsset(record.assetID) }
        guard entitlement.covers([first.assetID, first.fairPlayAssetID]) else { throw .notEntitled("the token is not for \(record.assetID)") }
        let rights = try rights(first.policy.applying(entitlement.policy), entitlement, persistent: record.persistent)
        guard rights.renewalSeconds != nil else { throw .policyDenied("the license of \(record.assetID) is not renewable") }
        if rights.persistent { try await service.offlineGrants?.grant(device: device.deviceID, user: device.subject, asset: record.assetID) }
        try await registry.update(record.licenseID, state: .renewed, rights: rights, at: now)
        return try await license(record.licenseID, device: device, assetID: record.assetID, keys: keys, rights: rights,
                                 renewalURL: renewalURL, nonce: claims.nonce)
    }

    /// Records that the device gave a license back (no token needed: a release may be owed for weeks).
    public func release(_ request: String) async throws(LicensingError) -> DeviceLicenseRecord {
        let (claims, device) = try await verify(request, subject: nil)
        let record = try await owned(claims, device)
        try await registry.update(record.licenseID, state: .released, at: service.clock.now)
        return try await registry.license(record.licenseID)
    }

    /// The state of every license issued to the device that signed `request`, signed with the server's time (no
    /// token needed: a device reconciles its store at every sync).
    public func status(_ request: String) async throws(LicensingError) -> String {
        let (claims, device) = try await verify(request, subject: nil)
        let entries = try await registry.licenses(device: device.deviceID).map { LicenseStatusClaims.Entry(licenseID: $0.licenseID, state: $0.state.rawValue) }
        return try await sign(LicenseStatusClaims(deviceID: device.deviceID, licenses: entries, time: service.clock.now, nonce: claims.nonce))
    }

    /// The server's time, signed (the device's secure clock trusts nothing else).
    public func signedTime(nonce: String?) async throws(LicensingError) -> String {
        if let nonce, nonce.utf8.count > 128 { throw .badRequest("the nonce is at most 128 bytes") }
        return try await sign(SignedTimeClaims(time: service.clock.now, nonce: nonce))
    }

    /// The signature of an answer's exact bytes to the device request whose nonce is `nonce` (`SignedAnswer`): what the
    /// device applies from the backplane (commands, settings, grants, slots, feed items) is checked against it.
    public func signAnswer(_ body: Data, nonce: String) async throws(LicensingError) -> String {
        let signer = try await registry.signingKey()
        do {
            return try SignedAnswer.sign(body, nonce: nonce, key: signer.key, kid: signer.kid)
        } catch {
            throw .configuration("cannot sign: \(error.description)")
        }
    }

    /// The keys licenses are signed with, as a JWKS: the one signing now first, then those before it (what they signed
    /// still verifies).
    public func keySet() async throws(LicensingError) -> PublicKeySet {
        PublicKeySet(keys: try await registry.keyring.keys().published)
    }

    /// The statements that introduced each signing key after the first, oldest first (`KeyRotationClaims`).
    public func keyRotations() async throws(LicensingError) -> KeyRotationsAnswer {
        KeyRotationsAnswer(rotations: try await registry.keyring.keys().rotations)
    }

    /// The rights of a license under `policy` (the asset's, with the token's overrides already applied), persistent only
    /// when asked and allowed. The token's own expiry does not shorten them; a policy that has ended refuses.
    func rights(_ policy: AssetPolicy, _ entitlement: Entitlement, persistent: Bool) throws(LicensingError) -> Rights {
        if let notAfter = policy.notAfter, policy.window.position(at: service.clock.now) == .after {
            throw .policyDenied("not available after \(ISODate.string(notAfter))")
        }
        return policy.rights(persistent: persistent && LicenseService.allowsOffline(entitlement, policy))
    }

    private func license(_ licenseID: String, device: DeviceRecord, assetID: String, keys: [StoredKey], rights: Rights,
                         renewalURL: String?, nonce: String) async throws(LicensingError) -> String {
        let recipient: P256.KeyAgreement.PublicKey
        do { recipient = try device.publicKey.agreementKey() } catch { throw .storage("the device's stored key is unusable") }
        var sealed: [SealedKey] = []
        for key in keys {
            do {
                sealed.append(try SealedKey.seal(key.key.key, kid: key.key.keyID.hex, iv: key.key.iv, to: recipient,
                                                 licenseID: licenseID, deviceID: device.deviceID))
            } catch {
                throw .configuration("cannot seal a key to the device: \(error.description)")
            }
        }
        let claims = LicenseClaims(licenseID: licenseID, deviceID: device.deviceID, assetID: assetID, keys: sealed, rights: rights,
                                   serverTime: service.clock.now, renewalURL: rights.renewalSeconds == nil ? nil : renewalURL, nonce: nonce)
        return try await sign(claims)
    }

    /// Checks a signed device request for an endpoint other than licenses (the backplane's): this server's certificate,
    /// the device's key, a fresh nonce dated within the allowed skew; with `token`, the token must be valid and its
    /// subject the device's user (a device syncing in the background may call without one).
    public func authenticate(_ request: String, token: String?) async throws(LicensingError) -> (claims: DeviceRequestClaims, device: DeviceRecord) {
        var subject: String?
        if let token { subject = try await service.entitlement(token).sub.value }
        return try await verify(request, subject: subject)
    }

    /// Checks a device request: the certificate is this server's, the device is registered with that key (and,
    /// when `subject` is given, to that user), and the request is signed by it.
    private func verify(_ request: String, subject: String?) async throws(LicensingError) -> (DeviceRequestClaims, DeviceRecord) {
        do {
            let unverified = try SignedToken.unverifiedClaims(request, as: DeviceRequestClaims.self)
            // Any of the server's keys: a certificate signed before a rotation stays good.
            guard let issuer = try await registry.keyring.verifyingKey(try SignedToken.keyID(unverified.certificate)) else {
                throw RightsError.badSignature("the certificate was not signed by this server")
            }
            let certificate = try SignedToken.verify(unverified.certificate, as: DeviceCertificateClaims.self, key: issuer)
            let device = try await registry.device(certificate.deviceID)
            guard device.publicKey.fingerprint == certificate.key.fingerprint else { throw LicensingError.notEntitled("the certificate's key is not the device's") }
            if let subject, subject != device.subject { throw LicensingError.notEntitled("the device is registered to another user") }
            try SignedToken.checkSignature(request, key: certificate.key.signingKey())
            let claims = unverified  // verified now: the same bytes, not decoded twice
            guard (16...128).contains(claims.nonce.utf8.count) else { throw LicensingError.badRequest("the nonce is 16 to 128 bytes") }
            let now = service.clock.now
            let skew = claims.time.timeIntervalSince(now)
            guard abs(skew) <= Self.allowedSkew else {
                throw LicensingError.clockSkew("it is dated \(Int(abs(skew))) s \(skew > 0 ? "ahead of" : "behind") the server's time (at most \(Int(Self.allowedSkew)) s either way)")
            }
            try await registry.consumeNonce(claims.nonce, device: device.deviceID, at: now, retention: Self.nonceRetention)
            return (claims, device)
        } catch let error as LicensingError {
            throw error
        } catch let error as RightsError {
            if case .badSignature = error { throw .notEntitled("the request is not signed by a device this server certified") }
            throw .badRequest(error.description)
        } catch {
            throw .badRequest("\(error)")
        }
    }

    private func owned(_ claims: DeviceRequestClaims, _ device: DeviceRecord) async throws(LicensingError) -> DeviceLicenseRecord {
        guard let id = claims.licenseID else { throw .badRequest("licenseID is required") }
        let record = try await registry.license(id)
        guard record.deviceID == device.deviceID else { throw .notEntitled("the license belongs to another device") }
        return record
    }

    /// Every key of the asset the request names (by asset ID, or by the asset of its key IDs).
    private func keys(for claims: DeviceRequestClaims) async throws(LicensingError) -> [StoredKey] {
        var assetID = claims.assetID
        if assetID == nil, let hex = claims.keyIDs?.first {
            guard let keyID = try? KeyID(hex: hex) else { throw .badRequest("key IDs are 32 hex digits") }
            assetID = try await service.store.key(id: keyID).assetID
        }
        guard let assetID, !assetID.isEmpty, assetID.utf8.count <= 200 else { throw .badRequest("assetID or keyIDs is required") }
        return try await keys(asset: assetID)
    }

    /// Every key of an asset (the key store reads them through its index by asset).
    private func keys(asset assetID: String) async throws(LicensingError) -> [StoredKey] {
        try await service.store.keys(asset: assetID)
    }

    private func sign(_ claims: some Encodable) async throws(LicensingError) -> String {
        let signer = try await registry.signingKey()
        do {
            return try SignedToken.sign(claims, key: signer.key, kid: signer.kid)
        } catch {
            throw .configuration("cannot sign: \(error.description)")
        }
    }
}

extension AssetPolicy {
    /// These rights in the one rights model: the availability window as start and end, the rental as validity
    /// after acquisition, the playback window, output controls; renewable only when the policy names a renewal
    /// interval (a rental alone is never renewed).
    public func rights(persistent: Bool) -> Rights {
        Rights(start: notBefore, end: notAfter, validitySeconds: rentalSeconds, playbackSeconds: playbackSeconds, persistent: persistent,
               renewalSeconds: renewalSeconds,
               output: OutputControls(hdcp: HDCPLevel(rawValue: (hdcp ?? .none).rawValue) ?? .none, airPlay: allowAirPlay,
                                      externalDisplay: allowAirPlay, analog: true))
    }
}
