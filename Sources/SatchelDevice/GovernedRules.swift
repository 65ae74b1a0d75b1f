import SatchelBackplane
import SatchelDownloads

extension DownloadRules {
    /// These rules with the backplane's settings over them (the backplane pushes download rules to every
    /// device): each setting the operator gave replaces the device's own value; one left unset keeps it.
    public func governed(by settings: BackplaneSettings) -> DownloadRules {
        var rules = self
        if let value = settings.maxDownloadedAssets { rules.maxDownloadedAssets = value }
        if let value = settings.maxStorageAllowed { rules.maxStorageAllowed = value }
        if let value = settings.headroom { rules.headroom = value }
        if let value = settings.downloadOverCellular { rules.downloadOverCellular = value }
        return rules
    }
}
