/// What the backplane decides, as functions of what it knows (enabling and disabling
/// downloads, and the download limits): no I/O; the store calls these inside the transaction that reads the counts.
package enum BackplaneRules {
    /// A new device's toggle: enabled while its user has fewer download-enabled devices than the limit, else
    /// disabled with the notice "device limit reached".
    package static func enrollment(enabledDevices: Int, limits: BackplaneLimits) -> Enrollment {
        guard let most = limits.maxDevices, enabledDevices >= most else { return Enrollment(downloadEnabled: true, notice: nil) }
        return Enrollment(downloadEnabled: false, notice: .deviceLimitReached)
    }

    /// A new device's toggle, and the notice the device gets with it.
    package struct Enrollment: Sendable, Equatable {
        /// Whether the device may download.
        package var downloadEnabled: Bool
        /// The notice for the device, when there is one.
        package var notice: BackplaneNotice?
    }

    /// The toggle after `updateDownloadEnabled(wanted)` on `device`: off always; on only while the user's
    /// other download-enabled devices are under the limit; a killed device changes nothing.
    package static func downloadEnabled(_ wanted: Bool, device: BackplaneDevice, otherEnabledDevices: Int,
                                       limits: BackplaneLimits) throws(BackplaneError) -> Bool {
        guard device.state == .active else { throw .deviceKilled(device.deviceID) }
        guard wanted, !device.downloadEnabled else { return wanted }
        if let most = limits.maxDevices, otherEnabledDevices >= most { throw .deviceLimitReached(user: device.user, limit: most) }
        return true
    }

    /// Whether `device` may start downloading an asset: a killed or disabled device may not; an asset it was granted
    /// already it may (asking again changes nothing); an asset that is not downloadable it may not; else the asset must
    /// fit under the device's asset limit (`assetsOnDevice`: the assets it was granted and has not deleted) and the
    /// account's download limit (`accountDownloads`: the user's grants on every device).
    package static func permission(device: BackplaneDevice, alreadyGranted: Bool, downloadable: Bool, assetsOnDevice: Int,
                                  accountDownloads: Int, limits: BackplaneLimits) -> DownloadPermission {
        guard device.state == .active else { return .refused(.deviceKilled) }
        guard device.downloadEnabled else { return .refused(.deviceNotEnabled) }
        if alreadyGranted { return .granted }
        guard downloadable else { return .refused(.assetNotDownloadable) }
        if let most = limits.maxAssetsPerDevice, assetsOnDevice >= most { return .refused(.deviceAssetLimit) }
        if let most = limits.maxDownloads, accountDownloads >= most { return .refused(.accountDownloadLimit) }
        return .granted
    }
}

/// The answer to "may this device download this asset?".
public enum DownloadPermission: Sendable, Equatable {
    /// Yes.
    case granted
    /// No, and why.
    case refused(PermissionRefusal)

    /// Whether it is granted.
    public var isGranted: Bool { self == .granted }
}

/// Why a download is refused, with a stable code.
public enum PermissionRefusal: String, Codable, Sendable, CaseIterable {
    /// The device's downloads are disabled (the user's device limit, or the operator).
    case deviceNotEnabled = "device-not-enabled"
    /// The device holds as many assets as it may.
    case deviceAssetLimit = "device-asset-limit"
    /// The account made as many downloads as it may.
    case accountDownloadLimit = "account-download-limit"
    /// The asset may not be downloaded.
    case assetNotDownloadable = "asset-not-downloadable"
    /// The device was remotely killed.
    case deviceKilled = "device-killed"

    /// The reason as a person reads it.
    public var text: String {
        switch self {
        case .deviceNotEnabled: return "this device's downloads are disabled"
        case .deviceAssetLimit: return "this device holds as many downloads as it may"
        case .accountDownloadLimit: return "this account made as many downloads as it may"
        case .assetNotDownloadable: return "this asset may not be downloaded"
        case .deviceKilled: return "this device was remotely killed"
        }
    }
}

extension DownloadPermission: Codable {
    private enum Keys: String, CodingKey { case granted, reason }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        if try container.decode(Bool.self, forKey: .granted) {
            self = .granted
        } else {
            self = .refused(try container.decode(PermissionRefusal.self, forKey: .reason))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(isGranted, forKey: .granted)
        if case let .refused(reason) = self { try container.encode(reason, forKey: .reason) }
    }
}
