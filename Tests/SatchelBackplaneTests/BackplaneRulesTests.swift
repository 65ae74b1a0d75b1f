import Foundation
import SatchelBytes
import Testing
@testable import SatchelBackplane

/// The backplane's rules with values (seed 003: the backplane-enforced toggle, "max download-enabled devices per
/// user", remote delete / wipe / kill, the global EAP/EAD defaults): every limit below, at and above its boundary.
@Suite("Backplane rules")
struct BackplaneRulesTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func device(_ id: String = "d1", user: String = "alice", enabled: Bool = true, state: BackplaneDevice.State = .active) -> BackplaneDevice {
        BackplaneDevice(deviceID: id, user: user, downloadEnabled: enabled, state: state, registered: now)
    }

    @Test("a new device is enabled while its user has fewer enabled devices than the limit, and disabled with 'device limit reached' at and beyond it; no limit enables every device")
    func enrollment() {
        let limits = BackplaneLimits(maxDevices: 2)
        #expect(BackplaneRules.enrollment(enabledDevices: 0, limits: limits) == .init(downloadEnabled: true, notice: nil))
        #expect(BackplaneRules.enrollment(enabledDevices: 1, limits: limits) == .init(downloadEnabled: true, notice: nil))
        #expect(BackplaneRules.enrollment(enabledDevices: 2, limits: limits) == .init(downloadEnabled: false, notice: .deviceLimitReached))
        #expect(BackplaneRules.enrollment(enabledDevices: 3, limits: limits) == .init(downloadEnabled: false, notice: .deviceLimitReached))
        #expect(BackplaneRules.enrollment(enabledDevices: 0, limits: BackplaneLimits(maxDevices: 0)).downloadEnabled == false)
        #expect(BackplaneRules.enrollment(enabledDevices: 10_000, limits: .none).downloadEnabled)
    }

    @Test("updateDownloadEnabled: off always; on only while the other enabled devices are under the limit (409 device-limit-reached at it); an enabled device stays on; a killed device is refused")
    func toggle() throws {
        let limits = BackplaneLimits(maxDevices: 2)
        let off = Self.device(enabled: false)
        #expect(try BackplaneRules.downloadEnabled(true, device: off, otherEnabledDevices: 1, limits: limits))
        #expect(throws: BackplaneError.deviceLimitReached(user: "alice", limit: 2)) {
            try BackplaneRules.downloadEnabled(true, device: off, otherEnabledDevices: 2, limits: limits)
        }
        #expect(throws: BackplaneError.self) { try BackplaneRules.downloadEnabled(true, device: off, otherEnabledDevices: 3, limits: limits) }
        #expect(try BackplaneRules.downloadEnabled(false, device: Self.device(), otherEnabledDevices: 5, limits: limits) == false)
        #expect(try BackplaneRules.downloadEnabled(true, device: Self.device(), otherEnabledDevices: 5, limits: limits), "already on: nothing to check")
        #expect(try BackplaneRules.downloadEnabled(true, device: off, otherEnabledDevices: 99, limits: .none))
        #expect(throws: BackplaneError.deviceKilled("d1")) {
            try BackplaneRules.downloadEnabled(false, device: Self.device(state: .killed), otherEnabledDevices: 0, limits: limits)
        }
        #expect(BackplaneError.deviceLimitReached(user: "alice", limit: 2).httpStatus == 409)
    }

    @Test("permission: killed, disabled and not downloadable are refused with their reason; the device's asset limit and the account's download limit refuse at their boundary, not below; an asset granted already is granted again")
    func permission() {
        let limits = BackplaneLimits(maxAssetsPerDevice: 3, maxDownloads: 5)
        func ask(_ device: BackplaneDevice = Self.device(), granted: Bool = false, downloadable: Bool = true, onDevice: Int = 0, account: Int = 0) -> DownloadPermission {
            BackplaneRules.permission(device: device, alreadyGranted: granted, downloadable: downloadable, assetsOnDevice: onDevice,
                                      accountDownloads: account, limits: limits)
        }
        #expect(ask() == .granted)
        #expect(ask(onDevice: 2, account: 4) == .granted, "one below each limit")
        #expect(ask(onDevice: 3) == .refused(.deviceAssetLimit))
        #expect(ask(onDevice: 4) == .refused(.deviceAssetLimit))
        #expect(ask(onDevice: 0, account: 5) == .refused(.accountDownloadLimit))
        #expect(ask(onDevice: 0, account: 6) == .refused(.accountDownloadLimit))
        #expect(ask(granted: true, onDevice: 3, account: 5) == .granted, "asking again for an asset granted already")
        #expect(ask(downloadable: false) == .refused(.assetNotDownloadable))
        #expect(ask(Self.device(enabled: false)) == .refused(.deviceNotEnabled))
        #expect(ask(Self.device(enabled: false), granted: true) == .refused(.deviceNotEnabled), "a disabled device downloads nothing")
        #expect(ask(Self.device(state: .killed)) == .refused(.deviceKilled))
        #expect(BackplaneRules.permission(device: Self.device(), alreadyGranted: false, downloadable: true, assetsOnDevice: 1_000, accountDownloads: 1_000,
                                          limits: .none) == .granted)
    }

    @Test("limits: a user's own fields replace the global ones field by field, for a user with no device yet too; negative or absurd limits are refused")
    func limits() throws {
        let table = LimitTable(global: BackplaneLimits(maxDevices: 3, maxAssetsPerDevice: 10), perUser: ["bob": BackplaneLimits(maxDevices: 1)])
        #expect(table.limits(for: "bob") == BackplaneLimits(maxDevices: 1, maxAssetsPerDevice: 10))
        #expect(table.limits(for: "alice") == BackplaneLimits(maxDevices: 3, maxAssetsPerDevice: 10))
        #expect(throws: BackplaneError.self) { try BackplaneLimits(maxDevices: -1).validated() }
        #expect(throws: BackplaneError.self) { try BackplaneLimits(maxDownloads: 2_000_000).validated() }
        #expect(try BackplaneLimits(maxDevices: 0).validated() == BackplaneLimits(maxDevices: 0))
    }

    @Test("a device is named by ID or ext:EXTERNAL-ID; empty, over-long or control characters are refused")
    func references() throws {
        let device = BackplaneDevice(deviceID: "d-7", user: "u", externalID: "tv-42", downloadEnabled: true, registered: Self.now)
        #expect(try DeviceReference("d-7") == .device("d-7") && DeviceReference("d-7").names(device))
        #expect(try DeviceReference("ext:tv-42") == .external("tv-42") && DeviceReference("ext:tv-42").names(device))
        #expect(try !DeviceReference("ext:d-7").names(device))
        #expect(try DeviceReference("ext:tv-42").description == "ext:tv-42")
        for bad in ["", "ext:", String(repeating: "a", count: 257), "a\nb", "ext:\u{7}"] {
            #expect(throws: BackplaneError.self, "\(bad.prefix(10))") { try DeviceReference(bad) }
        }
    }

    @Test("settings: a push replaces only the fields it sets; a zero window or a negative size is refused")
    func settings() throws {
        let current = BackplaneSettings(expiryAfterDownload: 86_400, maxDownloadedAssets: 20)
        let pushed = current.updated(with: BackplaneSettings(expiryAfterPlay: 3_600, maxDownloadedAssets: 5))
        #expect(pushed == BackplaneSettings(expiryAfterDownload: 86_400, expiryAfterPlay: 3_600, maxDownloadedAssets: 5))
        #expect(throws: BackplaneError.self) { try BackplaneSettings(expiryAfterPlay: 0).validated() }
        #expect(throws: BackplaneError.self) { try BackplaneSettings(headroom: -1).validated() }
    }
}
