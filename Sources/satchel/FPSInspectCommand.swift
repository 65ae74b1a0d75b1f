import ArgumentParser
import Foundation
import SatchelBytes
import SatchelFairPlay

/// `satchel fps inspect`: what Apple's verify_ckc does, on any platform.
struct FPSInspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect", abstract: "Report every TLLV of an SPC and, with --ckc, check the CKC that answers it.")

    @Option(help: "The SPC file.") var spc: String
    @Option(help: "The CKC file that answers the SPC.") var ckc: String?
    @OptionGroup var credentials: CredentialFiles
    @OptionGroup var secrets: SecretOptions
    @Flag(help: "Print one JSON object instead of text.") var json = false

    func run() throws {
        let parsed = try SPCParser(credentials: [credentials.credential(secrets)]).parse(FileIO.read(spc, what: "SPC"))
        let report = try InspectionReport(spc: parsed, ckcBytes: try ckc.map { try FileIO.read($0, what: "CKC") })
        if json {
            print(String(decoding: try JSONCoding.encoder(.pretty).encode(report), as: UTF8.self))
        } else {
            print(report.text)
        }
        if let part = report.ckc, !(part.r1Matches && part.returnedTagsMatch) {
            throw CLIError("the CKC does not pass the checks")
        }
    }
}
