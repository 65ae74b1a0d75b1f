import SatchelBytes

/// A decrypted Content Key Context, as a device sees it after opening it.
public struct CKC: Sendable {
    /// CKC version (1).
    public let version: UInt32
    /// The payload IV from the header.
    public let iv: [UInt8]
    /// All payload blocks in payload order.
    public let tllvs: TLLVList
    /// The content key, decrypted with SK.
    public let contentKey: SecretBytes
    /// The content IV.
    public let contentIV: [UInt8]
    /// The returned R1.
    public let r1: [UInt8]
    /// Content key duration, if present.
    public let duration: ContentKeyDuration?
    /// HDCP requirement, if the TLLV is present with a value of Table 2-12.
    public let hdcp: HDCPRequirement?
    /// The HDCP TLLV's level as sent (also an undefined one), if the TLLV is present.
    public let hdcpValue: UInt64?
    /// Offline key (dual expiry), if present.
    public let offlineKey: OfflineKeyPolicy?

    /// Opens CKC bytes with the values of the SPC it answers: SK for the content key,
    /// R1 and the AR seed for the payload key.
    public static func open(_ bytes: [UInt8], sessionKey: SecretBytes, r1: [UInt8], antiReplaySeed: [UInt8]) throws(FairPlayError) -> CKC {
        guard bytes.count >= CKCBuilder.headerSize else { throw .ckcTruncated(length: bytes.count, needed: CKCBuilder.headerSize) }
        var reader = ByteReader(bytes)
        let version: UInt32, iv: [UInt8], encrypted: [UInt8]
        do {
            version = try reader.readUInt32()
            guard version == 1 else { throw FairPlayError.unsupportedCKCVersion(version) }
            _ = try reader.readUInt32()
            iv = try reader.readBytes(16)
            let length = Int(try reader.readUInt32())
            guard length <= reader.remaining else {
                throw FairPlayError.ckcTruncated(length: bytes.count, needed: CKCBuilder.headerSize + length)
            }
            guard length == reader.remaining else { throw FairPlayError.invalidCKC("\(reader.remaining - length) bytes after the payload") }
            encrypted = try reader.readBytes(length)
        } catch let error as FairPlayError {
            throw error
        } catch {
            throw .ckcTruncated(length: bytes.count, needed: CKCBuilder.headerSize)
        }
        let arKey = try FairPlayCrypto.antiReplayKey(r1: r1, seed: antiReplaySeed)
        let payload = try FairPlayCrypto.cbcDecrypt(encrypted, key: arKey, iv: iv)
        let tllvs: TLLVList
        do {
            tllvs = try TLLVCodec.parse(payload)
        } catch {
            throw .invalidCKC("payload does not decrypt to TLLV blocks (\(error))")
        }
        return try CKC(version: version, iv: iv, tllvs: tllvs, sessionKey: sessionKey)
    }

    /// Opens a CKC that answers `spc`.
    public static func open(_ bytes: [UInt8], for spc: SPC) throws(FairPlayError) -> CKC {
        try open(bytes, sessionKey: spc.session.sessionKey, r1: spc.session.r1, antiReplaySeed: spc.antiReplaySeed)
    }

    /// The level of an HDCP enforcement TLLV: its first 8 bytes. Satchel and Apple's reference KSM write 16
    /// (the level, then 8 reserved bytes); 8 alone is read too. An undefined level is returned as it is, for the
    /// caller to report.
    static func hdcpLevel(_ block: TLLV) throws(FairPlayError) -> UInt64 {
        guard block.valueLength == 8 || block.valueLength == 16 else {
            throw .invalidCKC("HDCP enforcement TLLV value is \(block.valueLength) bytes, needs 8 or 16")
        }
        var reader = ByteReader(block.value)
        guard let level = try? reader.readUInt64() else { throw .invalidCKC("HDCP enforcement TLLV is truncated") }
        return level
    }

    private init(version: UInt32, iv: [UInt8], tllvs: TLLVList, sessionKey: SecretBytes) throws(FairPlayError) {
        self.version = version
        self.iv = iv
        self.tllvs = tllvs
        guard let keyBlock = tllvs[.encryptedContentKey] else { throw .invalidCKC("no encrypted content key TLLV") }
        guard keyBlock.valueLength == 32 else { throw .invalidCKC("encrypted content key TLLV value is \(keyBlock.valueLength) bytes, needs 32") }
        contentIV = Array(keyBlock.valueBytes.prefix(16))
        contentKey = SecretBytes(try FairPlayCrypto.ecbDecryptBlock(Array(keyBlock.valueBytes.suffix(16)), key: sessionKey.bytes))
        guard let r1Block = tllvs[.r1] else { throw .invalidCKC("no R1 TLLV") }
        r1 = r1Block.value
        duration = try tllvs[.contentKeyDuration].map { (block) throws(FairPlayError) in try ContentKeyDuration(tllv: block) }
        offlineKey = try tllvs[.offlineKey].map { (block) throws(FairPlayError) in try OfflineKeyPolicy(tllv: block) }
        if duration != nil && offlineKey != nil {
            throw .invalidCKC("Offline Key and Content Key Duration TLLVs together")
        }
        hdcpValue = try tllvs[.hdcpEnforcement].map(Self.hdcpLevel)
        hdcp = hdcpValue.flatMap(HDCPRequirement.init(rawValue64:))
    }
}
