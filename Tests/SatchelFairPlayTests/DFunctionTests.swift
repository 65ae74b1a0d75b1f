import Foundation
import SatchelBytes
import Testing
@testable import SatchelFairPlay

@Suite("D functions")
struct DFunctionTests {
    /// The 16 DHash vectors, read from the conformance README (never copied here).
    static func dHashVectors() throws -> [(r2: String, dHash: String)] {
        let text = String(decoding: try Conformance.bytes("README.md"), as: UTF8.self)
        return text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            guard parts.count == 2, parts[1].count == 32, parts[0].count >= 40,
                  parts.allSatisfy({ $0.allSatisfy(\.isHexDigit) }) else { return nil }
            return (String(parts[0]), String(parts[1]))
        }
    }

    @Test("DHash reproduces all 16 vectors of the conformance README")
    func dHashVectors() throws {
        let vectors = try Self.dHashVectors()
        #expect(vectors.count == 16)
        for vector in vectors {
            #expect(Hex.encode(try ProductionDFunction.dHash(try Hex.decode(vector.r2))) == vector.dHash, "R2 \(vector.r2)")
        }
    }

    @Test("production DASk is AES-ECB(ASk, DHash(R2))")
    func productionDASk() throws {
        let ask = SecretBytes(Array(0..<16))
        let r2 = try Hex.decode("a4c411c54d94727143504aece5613da8c6ee6dd2")
        let dask = try ProductionDFunction(ask: ask).derivedApplicationSecret(r2: r2)
        let expected = try FairPlayCrypto.ecbEncryptBlock(try Hex.decode("3a24a068c116842f10fac5c86cb1cb5c"), key: ask.bytes)
        #expect(dask.bytes == expected)
    }

    @Test("the development D function always answers its DASk")
    func developmentDASk() throws {
        let dask = try SecretBytes(hex: Conformance.developmentDASk, count: 16)
        let function = try DevelopmentDFunction(dask: dask)
        #expect(try function.derivedApplicationSecret(r2: SecureRandom.bytes(21)) == dask)
    }

    @Test("bad secret lengths and oversized R2 are typed errors")
    func badInputs() throws {
        #expect(throws: FairPlayError.invalidLength(what: "ASk", expected: 16, actual: 15)) {
            try ProductionDFunction(ask: SecretBytes(Array(repeating: 1, count: 15)))
        }
        #expect(throws: FairPlayError.invalidLength(what: "DASk", expected: 16, actual: 17)) {
            try DevelopmentDFunction(dask: SecretBytes(Array(repeating: 1, count: 17)))
        }
        #expect(throws: FairPlayError.self) { try ProductionDFunction.dHash(Array(repeating: 1, count: 56)) }
    }

    @Test("a secret never shows in its description")
    func secretRedaction() throws {
        let secret = try SecretBytes(hex: Conformance.developmentDASk, count: 16)
        #expect(!"\(secret)".contains("d87c"))
        #expect(!String(reflecting: secret).contains("d87c"))
    }
}
