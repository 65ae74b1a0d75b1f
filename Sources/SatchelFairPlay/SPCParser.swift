import SatchelBytes

/// Turns SPC bytes into an ``SPC``: header, credential selection by certificate hash,
/// RSA-OAEP key recovery, payload decryption, [SK...R1] decryption with the D function
/// and the integrity check (guide Table 2-1, steps 1-6).
public struct SPCParser: Sendable {
    /// The credentials to choose from.
    public let credentials: [FairPlayCredential]

    /// Size of the fixed SPC header.
    public static let headerSize = 176

    /// A parser that accepts SPCs made for any of `credentials`.
    public init(credentials: [FairPlayCredential]) {
        self.credentials = credentials
    }

    /// Reads the fixed header and returns it with the encrypted payload.
    public static func readHeader(_ bytes: [UInt8]) throws(FairPlayError) -> (SPC.Header, ArraySlice<UInt8>) {
        guard bytes.count >= headerSize else { throw .spcTruncated(length: bytes.count, needed: headerSize) }
        var reader = ByteReader(bytes)
        do {
            let version = try reader.readUInt32()
            guard version == 1 else { throw FairPlayError.unsupportedSPCVersion(version) }
            let reserved = try reader.readUInt32()
            let iv = try reader.readBytes(16)
            let encryptedKey = try reader.readBytes(128)
            let hash = try reader.readBytes(20)
            let length = Int(try reader.readUInt32())
            guard length <= reader.remaining else {
                throw FairPlayError.spcTruncated(length: bytes.count, needed: headerSize + length)
            }
            guard length == reader.remaining else { throw FairPlayError.spcTrailingBytes(count: reader.remaining - length) }
            guard length % 16 == 0 else { throw FairPlayError.payloadNotBlockAligned(length: length) }
            let payload = bytes[reader.offset..<(reader.offset + length)]
            let header = SPC.Header(version: version, reserved: reserved, iv: iv, encryptedKey: encryptedKey,
                                    certificateHash: hash, payloadLength: length)
            return (header, payload)
        } catch let error as FairPlayError {
            throw error
        } catch {
            throw .spcTruncated(length: bytes.count, needed: headerSize)
        }
    }

    /// Parses, decrypts and integrity-checks an SPC.
    public func parse(_ bytes: [UInt8]) throws(FairPlayError) -> SPC {
        let (header, encrypted) = try Self.readHeader(bytes)
        var lastError: FairPlayError?
        for credential in credentials where credential.matches(certificateHash: header.certificateHash) {
            do {
                return try parse(header: header, encrypted: encrypted, credential: credential)
            } catch {
                lastError = error
            }
        }
        throw lastError ?? .unknownCertificate(hashHex: Hex.encode(header.certificateHash))
    }

    private func parse(header: SPC.Header, encrypted: ArraySlice<UInt8>, credential: FairPlayCredential) throws(FairPlayError) -> SPC {
        let spck = try credential.decryptSPCKey(header.encryptedKey)
        let payload = try FairPlayCrypto.cbcDecrypt(encrypted, key: spck, iv: header.iv)
        let tllvs = try TLLVCodec.parse(payload)
        let session = try Self.openSessionBlock(tllvs, dFunction: credential.dFunction)
        return try SPC(header: header, tllvs: tllvs, session: session)
    }

    /// Decrypts [SK...R1] with DASk = D(R2) and checks it against the integrity TLLV.
    static func openSessionBlock(_ tllvs: TLLVList, dFunction: any DFunction) throws(FairPlayError) -> SPC.SessionValues {
        let block = try tllvs.required(.sessionKeyR1)
        guard block.valueLength == 112 else {
            throw .invalidTLLVValue(.sessionKeyR1, reason: "value is \(block.valueLength) bytes, needs 112")
        }
        let integrityBlock = try tllvs.required(.sessionKeyR1Integrity)
        guard integrityBlock.valueLength == 16 else {
            throw .invalidTLLVValue(.sessionKeyR1Integrity, reason: "value is \(integrityBlock.valueLength) bytes, needs 16")
        }
        let r2 = try tllvs.required(.r2).value
        let dask = try dFunction.derivedApplicationSecret(r2: r2)
        let plain = try FairPlayCrypto.cbcDecrypt(block.valueBytes.dropFirst(16), key: dask.bytes, iv: Array(block.valueBytes.prefix(16)))
        let integrity = Array(plain[80..<96])
        guard ConstantTime.equals(integrity, integrityBlock.valueBytes) else { throw .integrityCheckFailed }
        return SPC.SessionValues(sessionKey: SecretBytes(Array(plain[0..<16])), hu: Array(plain[16..<36]),
                                 r1: Array(plain[36..<80]), integrity: integrity)
    }
}
