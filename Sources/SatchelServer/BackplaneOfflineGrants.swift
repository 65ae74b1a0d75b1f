import SatchelBackplane
import SatchelLicensing

/// The backplane's download permissions as the license service's ``OfflineGrants``: a persistent license takes the
/// same grant a download does (the device's toggle, its asset limit, the account's download limit), held once per
/// device and asset.
struct BackplaneOfflineGrants: OfflineGrants {
    let store: any BackplaneStoring

    func grant(device: String, user: String, asset: String) async throws(LicensingError) {
        let permission: DownloadPermission
        do {
            // The license's policy allows offline use already (it was checked before): the asset is downloadable.
            permission = try await store.permission(device: device, asset: asset, downloadable: true)
        } catch .unknownDevice {
            throw .offlineRefused(code: "unknown-device", reason: "this device is not enrolled with the backplane: register it again")
        } catch {
            throw .storage("the device's download permission: \(error.description)")
        }
        if case let .refused(refusal) = permission { throw .offlineRefused(code: refusal.rawValue, reason: refusal.text) }
    }
}

extension BackplaneService {
    /// `store`'s download permissions as the license service's ``OfflineGrants``.
    package static func offlineGrants(_ store: any BackplaneStoring) -> any OfflineGrants { BackplaneOfflineGrants(store: store) }
}
