import CryptoExtras
import Foundation
import SatchelBytes

/// A software stand-in for an Apple device's FairPlay client, for tests and for people
/// testing their own key server.
///
/// It builds SPCs exactly as the guide lays them out and opens CKCs. It works only with
/// credentials whose DASk (or ASk) you hold, that is, Apple's development credentials or
/// test credentials of your own; it cannot talk to a production FairPlay deployment.
package struct DeviceSimulator: Sendable {
    /// What goes into a simulated SPC.
    package struct Options: Sendable {
        /// The asset ID (2-200 bytes).
        package var assetID: [UInt8]
        /// Media playback state; nil omits the TLLV.
        package var playbackState: MediaPlaybackState?
        /// Capabilities; nil omits the TLLV (as iOS 10 does).
        package var capabilities: Capabilities?
        /// Streaming indicator value; nil omits the TLLV.
        package var streamingIndicator: UInt64?
        /// Sync TLLV; nil omits it.
        package var sync: SyncInfo?
        /// Protocol versions supported; nil omits the TLLV.
        package var supportedVersions: [UInt32]?
        /// Protocol version used; nil omits the TLLV.
        package var usedVersion: UInt32?
        /// Extra blocks, typically with tags the guide does not define.
        package var extraTLLVs: [TLLV]
        /// Tags the CKC must return.
        package var returnTags: [TLLVTag]
        /// Transaction ID; nil omits the TLLV.
        package var transactionID: [UInt8]?
        /// The device's anonymized ID (20 bytes); nil: a random one per SPC.
        package var hu: [UInt8]?

        /// Options for a plain streaming request for `assetID`, with versions 1/1 and a transaction ID.
        package init(assetID: [UInt8], playbackState: MediaPlaybackState? = nil, capabilities: Capabilities? = nil,
                    streamingIndicator: UInt64? = nil, sync: SyncInfo? = nil, supportedVersions: [UInt32]? = [1],
                    usedVersion: UInt32? = 1, extraTLLVs: [TLLV] = [], returnTags: [TLLVTag] = [],
                    transactionID: [UInt8]? = SecureRandom.bytes(8)) {
            self.assetID = assetID
            self.playbackState = playbackState
            self.capabilities = capabilities
            self.streamingIndicator = streamingIndicator
            self.sync = sync
            self.supportedVersions = supportedVersions
            self.usedVersion = usedVersion
            self.extraTLLVs = extraTLLVs
            self.returnTags = returnTags
            self.transactionID = transactionID
        }
    }

    /// The device-side values needed to open the CKC that answers an SPC.
    /// Contains the session key: keep it out of logs.
    package struct Session: Sendable, Codable {
        /// The session key SK.
        package var sessionKey: SecretBytes
        /// R1.
        package var r1: [UInt8]
        /// The anti-replay seed.
        package var antiReplaySeed: [UInt8]
        /// The blocks named by the tag return request, as sent.
        package var requestedBlocks: [TLLV]

        enum CodingKeys: String, CodingKey { case sessionKey, r1, antiReplaySeed, requestedBlocks }

        init(sessionKey: SecretBytes, r1: [UInt8], antiReplaySeed: [UInt8], requestedBlocks: [TLLV]) {
            self.sessionKey = sessionKey
            self.r1 = r1
            self.antiReplaySeed = antiReplaySeed
            self.requestedBlocks = requestedBlocks
        }

        package init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            func hex(_ key: CodingKeys, _ count: Int) throws -> [UInt8] {
                let text = try container.decode(String.self, forKey: key)
                guard let bytes = try? Hex.decode(text, count: count) else {
                    throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "expected \(count) bytes of hex")
                }
                return bytes
            }
            sessionKey = SecretBytes(try hex(.sessionKey, 16))
            r1 = try hex(.r1, 44)
            antiReplaySeed = try hex(.antiReplaySeed, 16)
            let blocks = try container.decode([String].self, forKey: .requestedBlocks)
            requestedBlocks = try blocks.map { text in
                guard let bytes = try? Hex.decode(text), let list = try? TLLVCodec.parse(bytes), list.blocks.count == 1 else {
                    throw DecodingError.dataCorruptedError(forKey: .requestedBlocks, in: container, debugDescription: "not a TLLV block")
                }
                return list.blocks[0]
            }
        }

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(Hex.encode(sessionKey.bytes), forKey: .sessionKey)
            try container.encode(Hex.encode(r1), forKey: .r1)
            try container.encode(Hex.encode(antiReplaySeed), forKey: .antiReplaySeed)
            try container.encode(requestedBlocks.map { Hex.encode($0.encoded) }, forKey: .requestedBlocks)
        }
    }

    private let publicKey: RSAPublicKeyBox
    private let certificateHash: [UInt8]
    private let dFunction: any DFunction

    /// A simulator for the app identified by `certificate` (DER or PEM), deriving DASk with `dFunction`.
    package init(certificate: [UInt8], dFunction: any DFunction) throws(FairPlayError) {
        guard !certificate.isEmpty else { throw .missingCertificate }
        let der = try FairPlayCredential.certificateDER(certificate)
        let spki = try CertificateReader.subjectPublicKeyInfo(der)
        let key: _RSA.Encryption.PublicKey
        do {
            key = try _RSA.Encryption.PublicKey(unsafeDERRepresentation: spki)
        } catch {
            throw .invalidCertificate("the certificate's public key is not RSA")
        }
        guard key.keySizeInBits == 1024 else { throw .unsupportedRSAKeySize(bits: key.keySizeInBits) }
        self.publicKey = RSAPublicKeyBox(key: key)
        self.certificateHash = FairPlayCrypto.sha1(der)
        self.dFunction = dFunction
    }

    /// Builds an SPC. Returns its bytes and the session values needed to open the answer.
    package func makeSPC(_ options: Options) throws(FairPlayError) -> (spc: [UInt8], session: Session) {
        guard !options.assetID.isEmpty else { throw .missingAssetID }
        guard (2...200).contains(options.assetID.count) else { throw .invalidAssetIDLength(options.assetID.count) }
        if let versions = options.supportedVersions, versions.isEmpty { throw .missingVersionList }
        let sessionKey = SecretBytes.random(16)
        let hu = options.hu.flatMap { $0.count == 20 ? $0 : nil } ?? SecureRandom.bytes(20), r1 = SecureRandom.bytes(44), integrity = SecureRandom.bytes(16)
        let r2 = SecureRandom.bytes(21), arSeed = SecureRandom.bytes(16)
        let dask = try dFunction.derivedApplicationSecret(r2: r2)
        let skIV = SecureRandom.bytes(16)
        let sealed = try FairPlayCrypto.cbcEncrypt(sessionKey.bytes + hu + r1 + integrity, key: dask.bytes, iv: skIV)

        var blocks = [
            TLLV(tag: .sessionKeyR1, value: skIV + sealed, extraBlocks: Int.random(in: 0...2)),
            TLLV(tag: .sessionKeyR1Integrity, value: integrity, extraBlocks: Int.random(in: 0...2)),
            TLLV(tag: .antiReplaySeed, value: arSeed),
            TLLV(tag: .r2, value: r2),
            TLLV(tag: .assetID, value: options.assetID),
        ]
        func word(_ value: UInt32) -> [UInt8] { var w = ByteWriter(); w.writeUInt32(value); return w.bytes }
        func quad(_ value: UInt64) -> [UInt8] { var w = ByteWriter(); w.writeUInt64(value); return w.bytes }
        if let id = options.transactionID { blocks.append(TLLV(tag: .transactionID, value: id)) }
        if let versions = options.supportedVersions {
            blocks.append(TLLV(tag: .protocolVersionsSupported, value: versions.flatMap(word)))
        }
        if let used = options.usedVersion { blocks.append(TLLV(tag: .protocolVersionUsed, value: word(used))) }
        if let indicator = options.streamingIndicator { blocks.append(TLLV(tag: .streamingIndicator, value: quad(indicator))) }
        if let state = options.playbackState { blocks.append(TLLV(tag: .mediaPlaybackState, value: state.value)) }
        if let capabilities = options.capabilities { blocks.append(TLLV(tag: .capabilities, value: capabilities.value)) }
        if let sync = options.sync { blocks.append(TLLV(tag: .sync, value: sync.value)) }
        blocks += options.extraTLLVs
        if !options.returnTags.isEmpty {
            blocks.append(TLLV(tag: .tagReturnRequest, value: options.returnTags.flatMap { $0.bytes }))
        }
        let list = try TLLVList(SecureRandom.shuffled(blocks))
        let requested = options.returnTags.compactMap { list[$0] }
        let spc = try seal(payload: TLLVCodec.encode(list.blocks))
        return (spc, Session(sessionKey: sessionKey, r1: r1, antiReplaySeed: arSeed, requestedBlocks: requested))
    }

    /// Whether a key received at `receivedAt` may still decrypt at `now`, as the FPS client judges it: a lease runs from
    /// receipt (-42656 when over); a rental or a limited persisted key runs from receipt, an Offline Key's storage window
    /// until the first playback and its playback window from then (-42800 when over); an Offline Key TLLV of another
    /// version is a format the client no longer supports (-42799).
    package static func checkKey(_ ckc: CKC, receivedAt: Date, firstPlaybackAt: Date?, now: Date) throws(FairPlayError) {
        func over(_ seconds: UInt32, since start: Date) -> Bool { seconds > 0 && now > start.addingTimeInterval(TimeInterval(seconds)) }
        if let duration = ckc.duration {
            switch duration.keyType {
            case .leaseOnly, .leaseAndRental:
                if over(duration.leaseSeconds, since: receivedAt) { throw .leaseExpired }
            default: break
            }
            switch duration.keyType {
            case .rentalOnly, .leaseAndRental, .persistableLimited:
                if over(duration.rentalSeconds, since: receivedAt) { throw .persistentKeyExpired }
            default: break
            }
        }
        if let offline = ckc.offlineKey {
            guard offline.version == 1 else { throw .persistentKeyFormatUnsupported(version: offline.version) }
            if let firstPlaybackAt {
                if over(offline.playbackSeconds, since: firstPlaybackAt) { throw .persistentKeyExpired }
            } else if over(offline.storageSeconds, since: receivedAt) {
                throw .persistentKeyExpired
            }
        }
    }

    /// Wraps an arbitrary plaintext payload in an SPC container: a fresh SPC key, RSA-OAEP
    /// under the certificate's key, AES-CBC. Lets tests feed hostile payloads to a KSM.
    package func seal(payload: [UInt8]) throws(FairPlayError) -> [UInt8] {
        let spck = SecureRandom.bytes(16), iv = SecureRandom.bytes(16)
        let encrypted = try FairPlayCrypto.cbcEncrypt(payload, key: spck, iv: iv)
        let wrappedKey: [UInt8]
        do {
            wrappedKey = Array(try publicKey.key.encrypt(Data(spck), padding: .PKCS1_OAEP))
        } catch {
            throw .spcCreationFailed("RSA-OAEP encryption of the SPC key")
        }
        var writer = ByteWriter(capacity: SPCParser.headerSize + encrypted.count)
        writer.writeUInt32(1)
        writer.writeUInt32(0)
        writer.writeBytes(iv)
        writer.writeBytes(wrappedKey)
        writer.writeBytes(certificateHash)
        writer.writeUInt32(UInt32(encrypted.count))
        writer.writeBytes(encrypted)
        return writer.bytes
    }

    /// Opens the CKC that answers an SPC made by ``makeSPC(_:)`` and checks, as a device
    /// would, that R1 matches and that every requested block came back verbatim.
    package static func openCKC(_ bytes: [UInt8], session: Session) throws(FairPlayError) -> CKC {
        let ckc = try CKC.open(bytes, sessionKey: session.sessionKey, r1: session.r1, antiReplaySeed: session.antiReplaySeed)
        guard ConstantTime.equals(ckc.r1, session.r1) else { throw .invalidCKC("R1 does not match the SPC") }
        for block in session.requestedBlocks where ckc.tllvs[block.tag] != block {
            throw .invalidCKC("requested block \(block.tag) was not returned verbatim")
        }
        return ckc
    }
}

/// Holds an RSA public key across concurrency domains (an immutable BoringSSL handle).
struct RSAPublicKeyBox: @unchecked Sendable {
    let key: _RSA.Encryption.PublicKey
}
