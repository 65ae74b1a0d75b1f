import ArgumentParser
import SatchelBytes
import SatchelFairPlay

/// `--dask HEX | --ask HEX`: how DASk is derived.
struct SecretOptions: ParsableArguments {
    @Option(name: .customLong("dask"), help: "Development mode: the fixed 16-byte DASk in hex (Apple's development package).")
    var dask: String?

    @Option(name: .customLong("ask"), help: "Production mode: the 16-byte Application Secret key (ASk) in hex.")
    var ask: String?

    func validate() throws {
        guard (dask == nil) != (ask == nil) else { throw ValidationError("give exactly one of --dask or --ask") }
    }

    /// The D function these options select.
    func dFunction() throws -> any DFunction {
        do {
            if let dask { return try DevelopmentDFunction(dask: SecretBytes(hex: dask, count: 16)) }
            return try ProductionDFunction(ask: SecretBytes(hex: ask ?? "", count: 16))
        } catch let error as HexError {
            throw CLIError("\(dask != nil ? "--dask" : "--ask"): \(error)")
        }
    }
}

/// `--certificate` and `--private-key`.
struct CredentialFiles: ParsableArguments {
    @Option(help: "The Application Certificate (DER or PEM).")
    var certificate: String?

    @Option(name: .customLong("private-key"), help: "The certificate's 1024-bit RSA private key (PEM or DER).")
    var privateKey: String

    /// Loads the credential; without a certificate the key is tried on every SPC.
    func credential(_ secrets: SecretOptions) throws -> FairPlayCredential {
        let key = try FileIO.read(privateKey, what: "private key")
        guard let certificate else { return try FairPlayCredential(privateKey: key, dFunction: secrets.dFunction()) }
        return try FairPlayCredential(certificate: FileIO.read(certificate, what: "certificate"), privateKey: key,
                                      dFunction: secrets.dFunction())
    }
}

/// Parses a hex option of a fixed length, naming the option (never the value) on failure.
func hexOption(_ text: String, count: Int, name: String) throws -> [UInt8] {
    do {
        return try Hex.decode(text, count: count)
    } catch {
        throw CLIError("\(name): \(error)")
    }
}

extension HDCPRequirement: ExpressibleByArgument {}
