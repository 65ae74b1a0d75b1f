import ArgumentParser
import Foundation

/// Where a command's entitlement token comes from: `--token` (which every local user can read in the process list),
/// `--token-file FILE`, or `$SATCHEL_TOKEN`. The token itself is never printed.
struct TokenSource: ParsableArguments {
    @Option(name: .customLong("token-file"),
            help: "Read the entitlement token from this file instead of --token, which every user of this machine can see in the process list (or set $SATCHEL_TOKEN).")
    var tokenFile: String?

    /// The environment variable that may hold the token.
    static let environmentName = "SATCHEL_TOKEN"

    /// The token: `given` (the command's `--token`), else the file's, else the environment's; nil when none is given.
    func resolve(_ given: String?) throws -> String? {
        if given != nil, tokenFile != nil { throw CLIError("give --token or --token-file, not both") }
        if let given { return try Self.checked(given, from: "--token") }
        if let tokenFile {
            guard let data = FileManager.default.contents(atPath: tokenFile) else {
                throw CLIError("cannot read the token file \(tokenFile): check its path and that you may read it")
            }
            return try Self.checked(String(decoding: data, as: UTF8.self), from: "the token file \(tokenFile)")
        }
        return try ProcessInfo.processInfo.environment[Self.environmentName].map { try Self.checked($0, from: "$\(Self.environmentName)") }
    }

    /// The token, or an error saying how to give one.
    func required(_ given: String?) throws -> String {
        guard let token = try resolve(given) else {
            throw CLIError("this needs an entitlement token: give --token-file FILE, set $\(Self.environmentName), or give --token")
        }
        return token
    }

    private static func checked(_ text: String, from source: String) throws -> String {
        let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty else { throw CLIError("\(source) holds no token") }
        guard token.utf8.count <= 16_384, !token.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7F }) else {
            throw CLIError("\(source) does not hold one token (a single line, at most 16 KiB)")
        }
        return token
    }
}
