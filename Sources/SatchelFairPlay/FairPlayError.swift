import SatchelBytes

/// Everything that can go wrong in FairPlay processing.
///
/// Cases carry what went wrong and never carry a secret (no keys, no SK, no DASk).
/// ``appleErrorCode`` gives the code Apple's FPS client reports for the same condition
/// where the programming guide defines one (Table 3-1).
public enum FairPlayError: ProblemConvertible, Equatable {
    /// 403 when the policy or the client refuses, 500 for the server's own credentials and crypto, else 400.
    public var httpStatus: Int {
        switch self {
        case .streamingTargetNotAllowed, .clientLacksCapability, .certificateRevoked: return 403
        case .cryptoFailure, .invalidPrivateKey, .invalidCertificate, .unsupportedRSAKeySize: return 500
        default: return 400
        }
    }

    /// `fairplay-<code>`.
    public var problemType: String { "fairplay-" + code }

    // Containers
    /// The SPC is shorter than its fixed header or than its declared payload.
    case spcTruncated(length: Int, needed: Int)
    /// The SPC has bytes after its declared payload.
    case spcTrailingBytes(count: Int)
    /// The SPC version is not 1.
    case unsupportedSPCVersion(UInt32)
    /// A payload is not a whole number of 16-byte AES blocks.
    case payloadNotBlockAligned(length: Int)
    /// No configured credential has an Application Certificate with this SHA-1 hash.
    case unknownCertificate(hashHex: String)
    /// RSA-OAEP decryption of the SPC key failed (wrong private key or damaged SPC).
    case spcKeyDecryptionFailed
    /// The RSA-decrypted SPC key is not 16 bytes.
    case invalidSPCKeyLength(Int)
    /// The CKC is shorter than its header or its declared payload.
    case ckcTruncated(length: Int, needed: Int)
    /// The CKC version is not 1.
    case unsupportedCKCVersion(UInt32)
    /// The CKC is well formed but invalid (Apple: -42668).
    case invalidCKC(String)

    // TLLV
    /// A TLLV block length is not a multiple of 16.
    case tllvBlockLengthNotMultipleOf16(TLLVTag, blockLength: Int)
    /// A TLLV value length exceeds its block length.
    case tllvValueLongerThanBlock(TLLVTag, valueLength: Int, blockLength: Int)
    /// A TLLV runs past the end of the payload (tag nil when the header itself is cut).
    case tllvTruncated(TLLVTag?, offset: Int)
    /// A tag occurs twice in one payload.
    case duplicateTag(TLLVTag)
    /// A required TLLV is missing.
    case missingTLLV(TLLVTag)
    /// A TLLV has a value the guide does not allow.
    case invalidTLLVValue(TLLVTag, reason: String)
    /// The asset ID is not 2 to 200 bytes long (Apple: -42675).
    case invalidAssetIDLength(Int)
    /// A tag return request names a tag the SPC does not carry.
    case missingReturnedTag(TLLVTag)

    // Checks
    /// The [SK...R1] integrity value does not match: damaged SPC or wrong DASk / ASk.
    case integrityCheckFailed
    /// The device and the server have no protocol version in common (Apple: -42681).
    case noCommonProtocolVersion(device: [UInt32], server: [UInt32])
    /// The device used a version the server does not support (Apple: -42681).
    case protocolVersionNotSupported(used: UInt32, server: [UInt32])
    /// The device used an older version than the best common one, and the server refuses downgrades.
    case protocolDowngrade(used: UInt32, best: UInt32)
    /// The SPC creation date is outside the allowed window around the server clock.
    case spcCreationDateOutOfWindow(created: UInt32, now: UInt32, window: UInt32)
    /// The policy forbids streaming to this target.
    case streamingTargetNotAllowed(StreamingTarget)
    /// The client cannot enforce what the policy requires.
    case clientLacksCapability(String)
    /// The policy asks for something contradictory, such as an offline key and a key duration together.
    case policyConflict(String)

    // Inputs and credentials
    /// A key, IV or secret has the wrong length.
    case invalidLength(what: String, expected: Int, actual: Int)
    /// The private key cannot be read.
    case invalidPrivateKey(String)
    /// The RSA key is not 1024 bits, which the 128-byte SPC key field requires.
    case unsupportedRSAKeySize(bits: Int)
    /// The Application Certificate cannot be read.
    case invalidCertificate(String)
    /// A cryptographic primitive failed.
    case cryptoFailure(String)

    // Device side (the simulator), with the FPS client's codes
    /// No certificate was given for SPC creation.
    case missingCertificate
    /// No asset ID was given for SPC creation.
    case missingAssetID
    /// No version list was given for SPC creation.
    case missingVersionList
    /// SPC creation failed.
    case spcCreationFailed(String)
    /// The certificate has been revoked (the server's list names it).
    case certificateRevoked(hashHex: String)
    /// The key's lease has expired.
    case leaseExpired
    /// A persisted key (or an offline key's storage or playback window) has expired.
    case persistentKeyExpired
    /// A persisted key's format is no longer supported (a new key must be requested).
    case persistentKeyFormatUnsupported(version: UInt32)

    /// The FPS client error code for the same condition, where Table 3-1 of the guide defines one.
    public var appleErrorCode: Int? {
        switch self {
        case .leaseExpired: return -42656
        case .invalidCKC, .ckcTruncated, .unsupportedCKCVersion: return -42668
        case .missingCertificate: return -42672
        case .missingAssetID: return -42673
        case .missingVersionList: return -42674
        case .invalidAssetIDLength: return -42675
        case .spcCreationFailed: return -42676
        case .unknownCertificate, .invalidCertificate: return -42679
        case .noCommonProtocolVersion, .protocolVersionNotSupported: return -42681
        case .certificateRevoked: return -42783
        case .persistentKeyFormatUnsupported: return -42799
        case .persistentKeyExpired: return -42800
        default: return nil
        }
    }

    /// A stable identifier for the error kind, usable as a problem type or a metric label.
    public var code: String {
        switch self {
        case .spcTruncated: return "spc-truncated"
        case .spcTrailingBytes: return "spc-trailing-bytes"
        case .unsupportedSPCVersion: return "unsupported-spc-version"
        case .payloadNotBlockAligned: return "payload-not-block-aligned"
        case .unknownCertificate: return "unknown-certificate"
        case .spcKeyDecryptionFailed: return "spc-key-decryption-failed"
        case .invalidSPCKeyLength: return "invalid-spc-key-length"
        case .ckcTruncated: return "ckc-truncated"
        case .unsupportedCKCVersion: return "unsupported-ckc-version"
        case .invalidCKC: return "invalid-ckc"
        case .tllvBlockLengthNotMultipleOf16: return "tllv-block-length"
        case .tllvValueLongerThanBlock: return "tllv-value-length"
        case .tllvTruncated: return "tllv-truncated"
        case .duplicateTag: return "duplicate-tag"
        case .missingTLLV: return "missing-tllv"
        case .invalidTLLVValue: return "invalid-tllv-value"
        case .invalidAssetIDLength: return "invalid-asset-id"
        case .missingReturnedTag: return "missing-returned-tag"
        case .integrityCheckFailed: return "integrity-check-failed"
        case .noCommonProtocolVersion: return "no-common-protocol-version"
        case .protocolVersionNotSupported: return "protocol-version-not-supported"
        case .protocolDowngrade: return "protocol-downgrade"
        case .spcCreationDateOutOfWindow: return "spc-creation-date"
        case .streamingTargetNotAllowed: return "streaming-not-allowed"
        case .clientLacksCapability: return "client-lacks-capability"
        case .policyConflict: return "policy-conflict"
        case .invalidLength: return "invalid-length"
        case .invalidPrivateKey: return "invalid-private-key"
        case .unsupportedRSAKeySize: return "unsupported-rsa-key-size"
        case .invalidCertificate: return "invalid-certificate"
        case .cryptoFailure: return "crypto-failure"
        case .missingCertificate: return "missing-certificate"
        case .missingAssetID: return "missing-asset-id"
        case .missingVersionList: return "missing-version-list"
        case .spcCreationFailed: return "spc-creation-failed"
        case .certificateRevoked: return "certificate-revoked"
        case .leaseExpired: return "lease-expired"
        case .persistentKeyExpired: return "persistent-key-expired"
        case .persistentKeyFormatUnsupported: return "persistent-key-format-unsupported"
        }
    }

    public var description: String {
        let text: String
        switch self {
        case let .spcTruncated(length, needed): text = "SPC is \(length) bytes, needs at least \(needed)"
        case let .spcTrailingBytes(count): text = "SPC has \(count) bytes after its declared payload"
        case let .unsupportedSPCVersion(version): text = "SPC version \(version) is not supported (expected 1)"
        case let .payloadNotBlockAligned(length): text = "payload of \(length) bytes is not a multiple of 16"
        case let .unknownCertificate(hash): text = "no configured Application Certificate has SHA-1 \(hash)"
        case .spcKeyDecryptionFailed: text = "RSA-OAEP decryption of the SPC key failed (wrong private key or damaged SPC)"
        case let .invalidSPCKeyLength(length): text = "decrypted SPC key is \(length) bytes, expected 16"
        case let .ckcTruncated(length, needed): text = "CKC is \(length) bytes, needs at least \(needed)"
        case let .unsupportedCKCVersion(version): text = "CKC version \(version) is not supported (expected 1)"
        case let .invalidCKC(reason): text = "invalid CKC: \(reason)"
        case let .tllvBlockLengthNotMultipleOf16(tag, length): text = "TLLV \(tag) block length \(length) is not a multiple of 16"
        case let .tllvValueLongerThanBlock(tag, value, block): text = "TLLV \(tag) value length \(value) exceeds block length \(block)"
        case let .tllvTruncated(tag, offset):
            text = "TLLV \(tag.map { "\($0) " } ?? "")at payload offset \(offset) runs past the end of the payload"
        case let .duplicateTag(tag): text = "TLLV tag \(tag) appears more than once"
        case let .missingTLLV(tag): text = "required TLLV \(tag.name ?? "") (\(tag)) is missing"
        case let .invalidTLLVValue(tag, reason): text = "TLLV \(tag.name ?? "") (\(tag)) is invalid: \(reason)"
        case let .invalidAssetIDLength(length): text = "asset ID is \(length) bytes, must be 2 to 200"
        case let .missingReturnedTag(tag): text = "tag return request names \(tag), which the SPC does not carry"
        case .integrityCheckFailed: text = "[SK...R1] integrity check failed (damaged SPC, or wrong DASk / ASk)"
        case let .noCommonProtocolVersion(device, server):
            text = "no common FPS protocol version (device supports \(device), server \(server))"
        case let .protocolVersionNotSupported(used, server):
            text = "device used FPS protocol version \(used), server supports \(server)"
        case let .protocolDowngrade(used, best): text = "device used FPS protocol version \(used) although \(best) is common: possible downgrade attack"
        case let .spcCreationDateOutOfWindow(created, now, window):
            text = "SPC created at \(created) is more than \(window) s from server time \(now)"
        case let .streamingTargetNotAllowed(target): text = "policy does not allow streaming to \(target)"
        case let .clientLacksCapability(what): text = "client cannot enforce \(what)"
        case let .policyConflict(reason): text = "policy conflict: \(reason)"
        case let .invalidLength(what, expected, actual): text = "\(what) must be \(expected) bytes, got \(actual)"
        case let .invalidPrivateKey(reason): text = "cannot read the private key: \(reason)"
        case let .unsupportedRSAKeySize(bits): text = "RSA key is \(bits) bits; FairPlay needs 1024"
        case let .invalidCertificate(reason): text = "cannot read the Application Certificate: \(reason)"
        case let .cryptoFailure(operation): text = "cryptographic operation failed: \(operation)"
        case .missingCertificate: text = "no certificate was supplied for SPC creation"
        case .missingAssetID: text = "no asset ID was supplied for SPC creation"
        case .missingVersionList: text = "no version list was supplied for SPC creation"
        case let .spcCreationFailed(reason): text = "SPC creation failed: \(reason)"
        case let .certificateRevoked(hash): text = "the application certificate \(hash) has been revoked"
        case .leaseExpired: text = "the key's lease has expired"
        case .persistentKeyExpired: text = "the persisted key has expired; request a new one"
        case let .persistentKeyFormatUnsupported(version): text = "persisted key format \(version) is no longer supported; request a new key"
        }
        if let code = appleErrorCode { return "\(text) [FPS \(code)]" }
        return text
    }
}
