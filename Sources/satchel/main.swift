import ArgumentParser
import Foundation
import SatchelBytes

// Thin entry point: parse, run, and turn any failure into one line on stderr and a non-zero exit.
if let problem = ArgumentCheck.problem(in: Array(CommandLine.arguments.dropFirst())) { fail(problem, code: 64) }
do {
    var command = try await SatchelCommand.asyncParseAsRoot()
    if let asyncCommand = command as? any SatchelAsyncCommand {
        try await asyncCommand.execute()
    } else {
        try command.run()
    }
} catch let code as ExitCode {
    exit(code.rawValue)
} catch let error as any ProblemConvertible {
    fail(error.description)  // every module's error says what happened in one line
} catch let error where FileFailure.message(error) != nil {
    fail(FileFailure.message(error) ?? "")
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
