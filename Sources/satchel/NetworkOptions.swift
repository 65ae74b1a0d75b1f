import ArgumentParser
import Foundation
import SatchelDownloads

extension UnknownNetworkPolicy: ExpressibleByArgument {}

/// How a downloading command treats metered networks: the system's network monitor, and the two rules about it.
struct NetworkOptions: ParsableArguments {
    @Flag(name: .customLong("download-over-cellular"), help: "Download over metered (cellular) networks too. Default: never.")
    var downloadOverCellular = false
    @Option(name: .customLong("metered-unknown"),
            help: "allow or deny: whether to download when the network's type (metered or not) cannot be detected, e.g. without NetworkManager.")
    var meteredUnknown: UnknownNetworkPolicy = .allow

    /// `rules` with these two.
    func applied(to rules: DownloadRules) -> DownloadRules {
        var rules = rules
        rules.downloadOverCellular = downloadOverCellular
        rules.meteredUnknown = meteredUnknown
        return rules
    }

    /// The system's network monitor (NetworkManager on Linux, the network path on Apple platforms); says on stderr when
    /// it cannot tell the network's type, and what the rules then do.
    func monitor() -> any NetworkMonitor {
        #if canImport(Network)
        let monitor: any NetworkMonitor = PathNetworkMonitor()
        #else
        let monitor: any NetworkMonitor = NetworkManagerMonitor()
        #endif
        if monitor.current == .unknown {
            let then = downloadOverCellular || meteredUnknown == .allow ? "downloading anyway" : "nothing downloads (--metered-unknown deny)"
            FileHandle.standardError.write(Data("satchel: notice: the network's type (metered or not) cannot be detected (is NetworkManager running?); \(then)\n".utf8))
        }
        return monitor
    }
}
