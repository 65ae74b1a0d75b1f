import Foundation
import SatchelRights

/// How the device's store is reconciled with a license server's signed statement of the device's licenses
/// (``LicenseStatusClaims``), at every sync. Pure.
///
/// For the rows of that server: a license the server holds released, or does not know, is removed (with any
/// release still owed for it: the server has it back); a live one the sealed state does not vouch for — the state
/// was lost, or the license came back from an earlier copy of the store — is adopted, with its playback window
/// taken as started when it was issued (the first use cannot be known, so it is assumed as early as it could be).
/// A row that is not a license of this device is removed. Licenses of other servers are left as they are.
enum StoreReconciliation {
    /// What reconciling did.
    struct Outcome: Sendable, Equatable {
        /// The state after.
        var state: DeviceState
        /// The row changes.
        var changes: [LicenseStore.RowChange]
        /// Licenses removed (released on the server, unknown to it, or not licenses of this device).
        var removed: [String]
        /// Licenses the state now vouches for that it did not before.
        var adopted: [String]
    }

    /// What the caller found of each row's license, by the digest of its signed text: a license of this device
    /// with its verified claims, or not one. A row in neither (it arrived after the rows were examined) is left alone.
    struct Verdicts: Sendable {
        var licenses: [String: LicenseClaims] = [:]
        var invalid: Set<String> = []
    }

    /// Reconciles `state` (already the believed state, or a fresh one) and `rows` with `statuses` from `server`;
    /// `previous` is the state before, when it opened (its first uses are kept).
    static func reconcile(_ state: DeviceState, previous: DeviceState?, rows: [String: LicenseStore.Row], server: String,
                          statuses: [LicenseStatusClaims.Entry], verdicts: Verdicts) -> Outcome {
        var state = state
        var changes: [LicenseStore.RowChange] = []
        var removed: [String] = [], adopted: [String] = []
        let live = Dictionary(statuses.map { ($0.licenseID, $0.isLive) }) { first, _ in first }
        for (id, row) in rows.sorted(by: { $0.key < $1.key }) {
            let digest = DeviceState.digest(of: row.license)
            guard verdicts.licenses[digest] != nil || verdicts.invalid.contains(digest) else { continue }
            guard let claims = verdicts.licenses[digest], claims.licenseID == id else {
                changes.append(.delete(id))
                state.licenses[id] = nil
                removed.append(id)
                continue
            }
            guard row.server == server else { continue }
            guard live[id] == true else {
                changes.append(.delete(id))
                state.licenses[id] = nil
                state.owed.removeAll { $0.licenseID == id }
                removed.append(id)
                continue
            }
            guard state.licenses[id]?.digest != digest else { continue }
            let firstUse = previous?.licenses[id]?.firstUse ?? (claims.rights.playbackSeconds != nil ? claims.serverTime : nil)
            state.licenses[id] = DeviceState.InstalledLicense(digest: digest, firstUse: firstUse)
            adopted.append(id)
        }
        for id in Array(state.licenses.keys) where rows[id] == nil { state.licenses[id] = nil }
        return Outcome(state: state, changes: changes, removed: removed, adopted: adopted)
    }
}

extension LicenseStore.RowChange: Equatable {
    static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case let (.save(a), .save(b)): a == b
        case let (.delete(a), .delete(b)): a == b
        default: false
        }
    }
}
