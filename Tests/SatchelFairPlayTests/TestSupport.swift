import CryptoExtras
import Foundation
import SatchelBytes
@testable import SatchelFairPlay

/// Development-credential fixtures shared by the FairPlay tests.
struct Fixture {
    let credential: FairPlayCredential
    let simulator: DeviceSimulator

    init() throws {
        credential = try Conformance.developmentCredential()
        simulator = try DeviceSimulator(
            certificate: try Conformance.certificate(),
            dFunction: DevelopmentDFunction(dask: SecretBytes(hex: Conformance.developmentDASk, count: 16)))
    }

    func ksm(_ configure: (inout KeySecurityModule.Configuration) -> Void = { _ in }) -> KeySecurityModule {
        var configuration = KeySecurityModule.Configuration(credentials: [credential])
        configure(&configuration)
        return KeySecurityModule(configuration: configuration)
    }

    static func policy(key: [UInt8] = Array(repeating: 0x42, count: 16), iv: [UInt8] = Array(0..<16),
                       _ configure: (inout ContentKeyPolicy) -> Void = { _ in }) throws -> ContentKeyPolicy {
        var policy = try ContentKeyPolicy(contentKey: SecretBytes(key), contentIV: iv)
        configure(&policy)
        return policy
    }
}

/// A throwaway 1024-bit credential with a structurally valid certificate around its public key,
/// to test KSMs configured with several credentials.
struct GeneratedCredential {
    let certificate: [UInt8]
    let privateKeyPEM: [UInt8]

    init() throws {
        let key = try _RSA.Encryption.PrivateKey(unsafeKeySize: .init(bitCount: 1024))
        let spki = Array(key.publicKey.derRepresentation)
        func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
            var out = [tag]
            if content.count < 0x80 {
                out.append(UInt8(content.count))
            } else {
                out += [0x82, UInt8(content.count >> 8), UInt8(content.count & 0xff)]
            }
            return out + content
        }
        let algorithm = tlv(0x30, tlv(0x06, [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x05]) + [0x05, 0x00])
        let name = tlv(0x30, tlv(0x31, tlv(0x30, tlv(0x06, [0x55, 0x04, 0x03]) + tlv(0x0c, Array("test".utf8)))))
        let validity = tlv(0x30, tlv(0x17, Array("250101000000Z".utf8)) + tlv(0x17, Array("350101000000Z".utf8)))
        let tbs = tlv(0x30, tlv(0xA0, tlv(0x02, [2])) + tlv(0x02, [1]) + algorithm + name + validity + name + spki)
        certificate = tlv(0x30, tbs + algorithm + tlv(0x03, [0] + Array(repeating: 0, count: 16)))
        privateKeyPEM = Array(key.pemRepresentation.utf8)
    }
}
