import ArgumentParser
import Foundation
import JWTKit
import SatchelLicensing

/// `satchel token`: an entitlement token for local testing, signed with a key of a JWKS.
struct TokenCommand: SatchelAsyncCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Sign an entitlement token for development and tests (the JWKS key must hold its secret or private part).",
        discussion: "Prints the token (a JWT) on stdout. A content provider's backend issues real tokens; this is for trying Satchel out.")

    @Option(help: "The JSON Web Key Set `satchel serve --jwks` uses (an \"oct\" key, or an EC/RSA key with its private part).") var jwks: String
    @Option(help: "The key's kid.") var kid: String
    @Option(help: "The token's subject (user or device).") var sub: String
    @Option(help: "The asset it entitles, or * for every asset.") var asset: String
    @Flag(help: "Allow persistent (offline) licenses.") var persistent = false
    @Option(help: "Seconds until it expires (default 3600).") var ttl: Int = 3600
    @Option(help: "Audience (aud), when the server checks one.") var audience: String?
    @Option(help: "Issuer (iss), when the server checks one.") var issuer: String?

    func execute() async throws {
        guard (1...31_536_000).contains(ttl) else { throw CLIError("--ttl must be 1 to 31536000 seconds") }
        let signer = try await EntitlementVerifier(jwks: Data(try FileIO.read(jwks, what: "JWKS")))
        var claims = Entitlement(subject: sub, asset: asset, expires: Date().addingTimeInterval(Double(ttl)), persistent: persistent ? true : nil)
        claims.aud = audience.map { AudienceClaim(value: [$0]) }
        claims.iss = issuer.map { IssuerClaim(value: $0) }
        print(try await signer.sign(claims, kid: kid))
    }
}
