import ArgumentParser
import Foundation
import SatchelBytes
import SatchelDownloads

/// `download add`'s FairPlay options: the asset's key is a persistable FairPlay key asked for by the device's FairPlay
/// client (on Linux, Satchel's software client with the development DASk).
struct FairPlayDownloadOptions: ParsableArguments {
    @Option(name: .customLong("fps-certificate"), help: ArgumentHelp(
        "With --license: a FairPlay key instead of a Satchel license, for the app of this Application Certificate (DER or PEM): a persistable key asked for with an SPC, kept sealed, played offline.",
        valueName: "file")) var fpsCertificate: String?
    @Option(name: .customLong("fps-simulator-dask"), help: ArgumentHelp(
        "With --fps-certificate: the development DASk (32 hex digits) of Satchel's software FairPlay client, which stands in for an Apple device's (kept sealed with the asset, never printed).",
        valueName: "hex")) var fpsSimulatorDASk: String?

    /// The FairPlay client's credentials the options give (nil: a Satchel license).
    func options() throws -> FairPlayLicenseOptions? {
        guard let fpsCertificate else {
            if fpsSimulatorDASk != nil { throw CLIError("--fps-simulator-dask goes with --fps-certificate") }
            return nil
        }
        guard let dask = fpsSimulatorDASk else {
            throw CLIError("--fps-certificate needs --fps-simulator-dask on this platform: Satchel's software FairPlay client opens the keys")
        }
        guard (try? Hex.decode(dask, count: 16)) != nil else {
            throw CLIError("--fps-simulator-dask is 32 hex digits: the development DASk of Apple's FairPlay Streaming credentials")
        }
        let certificate = try FileIO.read(fpsCertificate, what: "Application Certificate")
        return FairPlayLicenseOptions(certificate: Data(certificate).base64EncodedString(), simulatorSecret: dask.lowercased())
    }
}
