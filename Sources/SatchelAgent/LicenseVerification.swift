import Foundation
import SatchelBytes
import SatchelRights

extension DeviceIdentity.Registration {
    /// The claims of `token` when it is a license the registered server signed for this device.
    func verifiedLicense(_ token: String) throws(AgentError) -> LicenseClaims {
        let claims: LicenseClaims
        do {
            claims = try SignedToken.verify(token, as: LicenseClaims.self, key: serverKeys.key(for: token))
        } catch {
            throw .invalidAnswer("the license does not verify: \(error.description)")
        }
        guard claims.deviceID == deviceID else { throw .invalidAnswer("the license was issued to another device") }
        return claims
    }
}

extension DeviceIdentity {
    /// The content keys of a stored license, opened with the device key (the license verified first).
    func keys(of license: StoredLicense) throws(AgentError) -> [PlaybackKey] {
        let registration = try registered()
        let claims = try registration.verifiedLicense(license.license)
        let agreement = try agreementKey
        var keys: [PlaybackKey] = []
        for sealed in claims.keys {
            do {
                let key = try sealed.open(with: agreement, licenseID: claims.licenseID, deviceID: registration.deviceID)
                keys.append(PlaybackKey(keyID: sealed.kid, key: key, iv: sealed.iv.flatMap { try? Hex.decode($0) }))
            } catch {
                throw .invalidAnswer(error.description)
            }
        }
        return keys
    }
}
