import Foundation
import SatchelBytes
import SatchelTestSupport
@testable import SatchelFairPlay

/// Access to `../shared/conformance/fairplay/`, read in place (never copied into the repo).
enum Conformance {
    static let root = FairPlayFixtures.root
    static let developmentDASk = FairPlayFixtures.developmentDASk

    static func bytes(_ path: String) throws -> [UInt8] { try FairPlayFixtures.bytes(path) }
    static func certificate() throws -> [UInt8] { try FairPlayFixtures.certificate() }
    static func privateKeyPEM() throws -> [UInt8] { try FairPlayFixtures.privateKeyPEM() }

    static func developmentCredential() throws -> FairPlayCredential {
        try FairPlayCredential(
            certificate: certificate(), privateKey: privateKeyPEM(),
            dFunction: DevelopmentDFunction(dask: SecretBytes(hex: developmentDASk, count: 16)))
    }

    /// One Apple SPC/CKC pair and the values the conformance README lists for it.
    struct Vector: CustomStringConvertible, Sendable {
        let directory: String
        let number: Int
        let assetID: String
        let sessionKey: String
        let contentKey: String
        let contentIV: String
        var lease: Bool { directory == "FPS-Lease" }
        var spcPath: String { "\(directory)/spc\(number).bin" }
        var ckcPath: String { "\(directory)/ckc\(number).bin" }
        var description: String { "\(directory)/\(number)" }
    }

    static let one = "6f6e65"
    static let longAsset = "aabbccddeeffaabbccddeeffaabbccddeeff"
    static let quickFox = "546865517569636b42726f776e466f78"

    static let vectors: [Vector] = [
        Vector(directory: "FPS", number: 1, assetID: longAsset, sessionKey: "afb46e7bf5f31596c1c676dc15e14dc6",
               contentKey: String(repeating: "3b", count: 16), contentIV: "d5fbd6b82ed93e4ef98ae40931ee33b7"),
        Vector(directory: "FPS", number: 2, assetID: one, sessionKey: "a663ff9aa82c5915f24d652489febdde",
               contentKey: String(repeating: "31", count: 16), contentIV: quickFox),
        Vector(directory: "FPS", number: 3, assetID: longAsset, sessionKey: "076fe16ccc49de38312476fd5bdf3ffb",
               contentKey: String(repeating: "3b", count: 16), contentIV: "d5fbd6b82ed93e4ef98ae40931ee33b7"),
    ] + (1...3).map {
        Vector(directory: "FPS-Lease", number: $0, assetID: one, sessionKey: "a663ff9aa82c5915f24d652489febdde",
               contentKey: String(repeating: "31", count: 16), contentIV: quickFox)
    }
}
