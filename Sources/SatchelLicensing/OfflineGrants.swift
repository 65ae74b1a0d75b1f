import Foundation

/// Where a persistent (offline) license takes the device's permission to keep the asset (seam: the backplane's
/// download limits): the limits are enforced where the license is issued, so a device that skips its own
/// permission request, or whose request was answered by someone else, still gets no offline license past them.
public protocol OfflineGrants: Sendable {
    /// Takes (or finds already held) `device`'s permission to keep `asset` offline for `user`;
    /// ``LicensingError/offlineRefused(code:reason:)`` when the device may not (its downloads disabled, a limit reached).
    func grant(device: String, user: String, asset: String) async throws(LicensingError)
}
