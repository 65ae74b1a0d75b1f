import ArgumentParser
import Foundation
import SatchelDownloads
import SatchelFairPlay
import SatchelLicensing
import SatchelPackager
import SatchelProtection

// Thin entry point: parse, run, and turn any failure into one line on stderr and a non-zero exit.
do {
    var command = try await SatchelCommand.asyncParseAsRoot()
    if let asyncCommand = command as? any SatchelAsyncCommand {
        try await asyncCommand.execute()
    } else {
        try command.run()
    }
} catch let error as LicensingError {
    fail(error.description)
} catch let error as FairPlayError {
    fail(error.description)
} catch let error as PackagerError {
    fail(error.description)
} catch let error as ProtectionError {
    fail(error.description)
} catch let code as ExitCode {
    exit(code.rawValue)
} catch let error as DownloadError {
    fail(error.description)
} catch let error as CLIError {
    fail(error.description)
} catch {
    let code = SatchelCommand.exitCode(for: error)
    if code == .success {
        SatchelCommand.exit(withError: error)  // --help and --version
    }
    fail(SatchelCommand.message(for: error), code: code.rawValue)
}

func fail(_ message: String, code: Int32 = 1) -> Never {
    let line = message.split(whereSeparator: \.isNewline).joined(separator: " ")
    FileHandle.standardError.write(Data("satchel: error: \(line)\n".utf8))
    exit(code)
}
