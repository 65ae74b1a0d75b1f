import SatchelBytes

/// A decrypted, integrity-checked Server Playback Context.
///
/// Produced by ``SPCParser``; every field the programming guide defines is typed, and every
/// block (defined or not) stays available verbatim in ``tllvs`` for tag return requests.
public struct SPC: Sendable {
    /// The fixed-size header fields (guide Table 2-3).
    public struct Header: Sendable, Equatable {
        /// SPC version (1).
        public var version: UInt32
        /// Reserved bytes 4-7.
        public var reserved: UInt32
        /// IV of the payload encryption.
        public var iv: [UInt8]
        /// The RSA-OAEP-encrypted payload key (128 bytes).
        public var encryptedKey: [UInt8]
        /// SHA-1 of the Application Certificate.
        public var certificateHash: [UInt8]
        /// Length of the encrypted payload.
        public var payloadLength: Int
    }

    /// The decrypted [SK...R1] payload (guide Table 2-7).
    public struct SessionValues: Sendable {
        /// The session key that encrypts the content key.
        public let sessionKey: SecretBytes
        /// The anonymised device ID (or AV adapter ID).
        public let hu: [UInt8]
        /// R1: returned in the CKC and hashed into the anti-replay key.
        public let r1: [UInt8]
        /// The integrity bytes compared with the integrity TLLV.
        public let integrity: [UInt8]
    }

    /// Header fields.
    public let header: Header
    /// All decrypted payload blocks in payload order.
    public let tllvs: TLLVList
    /// The session values from [SK...R1].
    public let session: SessionValues
    /// Anti-replay seed (16 bytes).
    public let antiReplaySeed: [UInt8]
    /// R2 (input of the D function).
    public let r2: [UInt8]
    /// Asset ID (2-200 bytes).
    public let assetID: [UInt8]
    /// Transaction ID (8 bytes), if present.
    public let transactionID: [UInt8]?
    /// Protocol versions the device supports, if sent.
    public let supportedVersions: [UInt32]?
    /// Protocol version the device used, if sent.
    public let usedVersion: UInt32?
    /// Raw streaming indicator, if sent.
    public let streamingIndicator: UInt64?
    /// Media playback state, if sent.
    public let playbackState: MediaPlaybackState?
    /// Capabilities, if sent.
    public let capabilities: Capabilities?
    /// Sync TLLV, if sent (valid or not; see ``isSyncSPC``).
    public let sync: SyncInfo?
    /// Tags the CKC must return verbatim, in request order, without repeats.
    public let returnRequest: [TLLVTag]

    /// Where the content will be shown.
    public var streamingTarget: StreamingTarget {
        streamingIndicator.map(StreamingTarget.init(indicator:)) ?? .device
    }

    /// True when the SPC carries a valid Sync TLLV.
    public var isSyncSPC: Bool { sync?.isValid ?? false }

    /// Blocks the guide does not define.
    public var undefinedTLLVs: [TLLV] { tllvs.undefined }

    /// The asset ID as text when it is printable UTF-8, otherwise nil.
    public var assetIDString: String? {
        guard let text = String(validating: assetID, as: UTF8.self),
              text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7f })
        else { return nil }
        return text
    }

    /// The blocks a CKC must return: every block named by the tag return request.
    public func blocksToReturn() throws(FairPlayError) -> [TLLV] {
        var blocks: [TLLV] = []
        for tag in returnRequest {
            guard let block = tllvs[tag] else { throw .missingReturnedTag(tag) }
            blocks.append(block)
        }
        return blocks
    }

    init(header: Header, tllvs: TLLVList, session: SessionValues) throws(FairPlayError) {
        self.header = header
        self.tllvs = tllvs
        self.session = session
        antiReplaySeed = try Self.fixed(tllvs, .antiReplaySeed, length: 16)
        r2 = try tllvs.required(.r2).value
        let asset = try tllvs.required(.assetID).value
        guard (2...200).contains(asset.count) else { throw .invalidAssetIDLength(asset.count) }
        assetID = asset
        transactionID = try tllvs[.transactionID].map { (block) throws(FairPlayError) in
            try Self.fixed(tllvs, block.tag, length: 8)
        }
        supportedVersions = try tllvs[.protocolVersionsSupported].map { (block) throws(FairPlayError) in
            try Self.words(block)
        }
        usedVersion = try tllvs[.protocolVersionUsed].map { (block) throws(FairPlayError) in
            let words = try Self.words(block)
            guard words.count == 1 else {
                throw .invalidTLLVValue(block.tag, reason: "value is \(block.valueLength) bytes, needs 4")
            }
            return words[0]
        }
        streamingIndicator = try tllvs[.streamingIndicator].map { (block) throws(FairPlayError) in
            var reader = ByteReader(try Self.fixed(tllvs, block.tag, length: 8))
            return (try? reader.readUInt64()) ?? 0
        }
        playbackState = try tllvs[.mediaPlaybackState].map { (block) throws(FairPlayError) in try MediaPlaybackState(tllv: block) }
        capabilities = try tllvs[.capabilities].map { (block) throws(FairPlayError) in try Capabilities(tllv: block) }
        sync = try tllvs[.sync].map { (block) throws(FairPlayError) in try SyncInfo(tllv: block) }
        var request: [TLLVTag] = [], seen: Set<TLLVTag> = []
        if let block = tllvs[.tagReturnRequest] {
            guard block.valueLength % 8 == 0 else {
                throw .invalidTLLVValue(block.tag, reason: "value is \(block.valueLength) bytes, not a list of 8-byte tags")
            }
            var reader = ByteReader(block.value)
            while !reader.isAtEnd, let raw = try? reader.readUInt64() {
                let tag = TLLVTag(raw)
                if seen.insert(tag).inserted { request.append(tag) }
            }
        }
        returnRequest = request
    }

    private static func fixed(_ tllvs: TLLVList, _ tag: TLLVTag, length: Int) throws(FairPlayError) -> [UInt8] {
        let block = try tllvs.required(tag)
        guard block.valueLength == length else {
            throw .invalidTLLVValue(tag, reason: "value is \(block.valueLength) bytes, needs \(length)")
        }
        return block.value
    }

    private static func words(_ block: TLLV) throws(FairPlayError) -> [UInt32] {
        guard block.valueLength % 4 == 0, block.valueLength > 0 else {
            throw .invalidTLLVValue(block.tag, reason: "value is \(block.valueLength) bytes, not a list of 4-byte versions")
        }
        var reader = ByteReader(block.value)
        var words: [UInt32] = []
        while !reader.isAtEnd, let word = try? reader.readUInt32() { words.append(word) }
        return words
    }
}
