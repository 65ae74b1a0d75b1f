import ArgumentParser
import Foundation
import SatchelDownloads

extension UnknownNetworkPolicy: ExpressibleByArgument {}

/// How a downloading command treats metered networks: the system's network monitor, and the two rules about it.
struct NetworkOptions: ParsableArguments {
    @Flag(name: .customLong("download-over-cellular"), help: "Download over metered (cellular) networks too. Default: never.")
    var downloadOverCellular = false
    @Option(name: .customLong("metered-unknown"),
            help: """
                allow or deny: whether to download when the network's type (metered or not) cannot be detected, e.g. on a \
                server without NetworkManager (default: $SATCHEL_METERED_UNKNOWN, else deny: an unknown network counts as metered).
                """)
    var meteredUnknown: UnknownNetworkPolicy?

    /// The policy for an unknown network: the option, else `$SATCHEL_METERED_UNKNOWN`, else deny.
    func unknownPolicy(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws -> UnknownNetworkPolicy {
        if let meteredUnknown { return meteredUnknown }
        guard let value = environment["SATCHEL_METERED_UNKNOWN"], !value.isEmpty else { return .deny }
        guard let policy = UnknownNetworkPolicy(rawValue: value) else {
            throw CLIError("SATCHEL_METERED_UNKNOWN must be allow or deny, not \(value)")
        }
        return policy
    }

    /// `rules` with these two.
    func applied(to rules: DownloadRules) throws -> DownloadRules {
        var rules = rules
        rules.downloadOverCellular = downloadOverCellular
        rules.meteredUnknown = try unknownPolicy()
        return rules
    }

    /// The system's network monitor (NetworkManager on Linux, the network path on Apple platforms); says once on
    /// stderr which network it saw and what the rules then do.
    func monitor() throws -> any NetworkMonitor {
        let monitor = SystemNetwork.shared
        FileHandle.standardError.write(Data("satchel: network: \(try verdict(monitor.current))\n".utf8))
        return monitor
    }

    /// What the network seen means for downloading, as one plain sentence.
    func verdict(_ type: NetworkType) throws -> String {
        switch type {
        case .unmetered:
            return "not metered (\(SystemNetwork.source)); downloading"
        case .cellular:
            return downloadOverCellular ? "metered (\(SystemNetwork.source)); downloading anyway (--download-over-cellular)"
                : "metered (\(SystemNetwork.source)); nothing downloads until an unmetered network is back, or with --download-over-cellular"
        case .none:
            return "none (\(SystemNetwork.source)); downloads start when a network is back"
        case .unknown:
            let allowed = try unknownPolicy() == .allow
            let then = downloadOverCellular || allowed
                ? "downloading anyway" : "it counts as metered: nothing downloads (pass --metered-unknown allow on a machine whose network is not metered)"
            return "its type (metered or not) cannot be detected (is \(SystemNetwork.source) running?); \(then)"
        }
    }
}
