import SatchelBytes

/// A report of an SPC and, optionally, the CKC that answers it: every TLLV and the checks
/// Apple's `verify_ckc` makes ("R1 matches", "returned tags match").
///
/// Holds no secret: not SK, not DASk, not the content key.
package struct InspectionReport: Sendable, Codable, Equatable {
    /// One TLLV block.
    package struct Block: Sendable, Codable, Equatable {
        /// Tag, 16 hex digits.
        package var tag: String
        /// The guide's name for the tag, nil when undefined.
        package var name: String?
        /// Value length.
        package var valueLength: Int
        /// Block length (value plus padding).
        package var blockLength: Int
        /// The value in hex.
        package var value: String

        init(_ tllv: TLLV) {
            tag = tllv.tag.description
            name = tllv.tag.name
            valueLength = tllv.valueLength
            blockLength = tllv.blockLength
            value = Hex.encode(tllv.value)
        }
    }

    /// Media playback state fields.
    package struct Playback: Sendable, Codable, Equatable {
        package var creationDate: UInt32
        package var state: String
        package var stateValue: String
        package var sessionID: String
    }

    /// Capability bits.
    package struct CapabilityBits: Sendable, Codable, Equatable {
        package var high: String
        package var low: String
        package var hdcpEnforcement: Bool
        package var offlineKey: Bool
    }

    /// Sync TLLV fields.
    package struct Sync: Sendable, Codable, Equatable {
        package var version: UInt32
        package var contentID: String
        package var durationToExpiry: UInt32
        package var isSyncSPC: Bool
    }

    /// Content key duration fields.
    package struct Duration: Sendable, Codable, Equatable {
        package var leaseSeconds: UInt32
        package var rentalSeconds: UInt32
        package var keyType: String
        package var keyTypeValue: String
        package var reserved: String
    }

    /// Offline key fields.
    package struct Offline: Sendable, Codable, Equatable {
        package var version: UInt32
        package var contentID: String
        package var storageSeconds: UInt32
        package var playbackSeconds: UInt32
    }

    /// The SPC part.
    package struct SPCPart: Sendable, Codable, Equatable {
        package var version: UInt32
        package var certificateHash: String
        package var payloadLength: Int
        package var assetID: String
        package var assetIDText: String?
        package var transactionID: String?
        package var supportedVersions: [UInt32]?
        package var usedVersion: UInt32?
        package var streamingTarget: String
        package var streamingIndicator: String?
        package var playbackState: Playback?
        package var capabilities: CapabilityBits?
        package var sync: Sync?
        package var returnRequest: [String]
        package var blocks: [Block]
    }

    /// The CKC part.
    package struct CKCPart: Sendable, Codable, Equatable {
        package var version: UInt32
        package var iv: String
        package var payloadLength: Int
        package var contentIV: String
        package var duration: Duration?
        package var hdcp: String?
        package var offlineKey: Offline?
        package var blocks: [Block]
        /// CKC R1 equals SPC R1.
        package var r1Matches: Bool
        /// Every tag the SPC asked for came back byte for byte.
        package var returnedTagsMatch: Bool
        /// Requested tags that are missing or altered.
        package var mismatchedTags: [String]
    }

    /// The SPC.
    package var spc: SPCPart
    /// The CKC, when one was given.
    package var ckc: CKCPart?

    /// Inspects a parsed SPC and, optionally, CKC bytes that answer it.
    package init(spc: SPC, ckcBytes: [UInt8]? = nil) throws(FairPlayError) {
        self.spc = SPCPart(
            version: spc.header.version,
            certificateHash: Hex.encode(spc.header.certificateHash),
            payloadLength: spc.header.payloadLength,
            assetID: Hex.encode(spc.assetID),
            assetIDText: spc.assetIDString,
            transactionID: spc.transactionID.map { Hex.encode($0) },
            supportedVersions: spc.supportedVersions,
            usedVersion: spc.usedVersion,
            streamingTarget: spc.streamingTarget.rawValue,
            streamingIndicator: spc.streamingIndicator.map { Self.hex64($0) },
            playbackState: spc.playbackState.map {
                Playback(creationDate: $0.creationDate, state: $0.state.description,
                         stateValue: Self.hex32($0.state.rawValue), sessionID: Self.hex64($0.sessionID))
            },
            capabilities: spc.capabilities.map {
                CapabilityBits(high: Self.hex64($0.high), low: Self.hex64($0.low),
                               hdcpEnforcement: $0.hdcpEnforcement, offlineKey: $0.offlineKey)
            },
            sync: spc.sync.map {
                Sync(version: $0.version, contentID: Hex.encode($0.contentID), durationToExpiry: $0.durationToExpiry, isSyncSPC: $0.isValid)
            },
            returnRequest: spc.returnRequest.map(\.description),
            blocks: spc.tllvs.map(Block.init))
        guard let ckcBytes else { return }
        let ckc = try CKC.open(ckcBytes, for: spc)
        let mismatched = spc.returnRequest.filter { tag in ckc.tllvs[tag] == nil || ckc.tllvs[tag] != spc.tllvs[tag] }
        self.ckc = CKCPart(
            version: ckc.version,
            iv: Hex.encode(ckc.iv),
            payloadLength: ckcBytes.count - CKCBuilder.headerSize,
            contentIV: Hex.encode(ckc.contentIV),
            duration: ckc.duration.map {
                Duration(leaseSeconds: $0.leaseSeconds, rentalSeconds: $0.rentalSeconds, keyType: $0.keyType.description,
                         keyTypeValue: Self.hex32($0.keyType.rawValue), reserved: Self.hex32($0.reserved))
            },
            hdcp: ckc.hdcp?.rawValue ?? ckc.hdcpValue.map { "undefined value 0x" + Self.hex64($0) },
            offlineKey: ckc.offlineKey.map {
                Offline(version: $0.version, contentID: Hex.encode($0.contentID),
                        storageSeconds: $0.storageSeconds, playbackSeconds: $0.playbackSeconds)
            },
            blocks: ckc.tllvs.map(Block.init),
            r1Matches: ConstantTime.equals(ckc.r1, spc.session.r1),
            returnedTagsMatch: mismatched.isEmpty,
            mismatchedTags: mismatched.map(\.description))
    }

    /// The report as readable text.
    package var text: String {
        var lines = ["===== SPC =====",
                     "version \(spc.version), certificate hash \(spc.certificateHash), payload \(spc.payloadLength) bytes",
                     "asset ID \(spc.assetID)" + (spc.assetIDText.map { " (\"\($0)\")" } ?? "")]
        if let id = spc.transactionID { lines.append("transaction ID \(id)") }
        let supported = spc.supportedVersions.map { $0.map(String.init).joined(separator: ",") } ?? "-"
        lines.append("protocol versions supported \(supported), used \(spc.usedVersion.map(String.init) ?? "-")")
        lines.append("streaming target \(spc.streamingTarget)")
        if let playback = spc.playbackState {
            lines.append("playback state \(playback.state) (\(playback.stateValue)), created \(playback.creationDate), session \(playback.sessionID)")
        }
        if let caps = spc.capabilities {
            lines.append("capabilities \(caps.high)\(caps.low): HDCP enforcement \(caps.hdcpEnforcement), offline key \(caps.offlineKey)")
        }
        if let sync = spc.sync {
            lines.append("sync version \(sync.version), content ID \(sync.contentID), duration to expiry \(sync.durationToExpiry)\(sync.isSyncSPC ? " (Sync SPC)" : " (invalid)")")
        }
        lines.append("tag return request: \(spc.returnRequest.isEmpty ? "none" : spc.returnRequest.joined(separator: " "))")
        lines += Self.render(spc.blocks)
        if let ckc {
            lines.append("===== CKC =====")
            lines.append("version \(ckc.version), IV \(ckc.iv), payload \(ckc.payloadLength) bytes, content IV \(ckc.contentIV)")
            if let d = ckc.duration {
                lines.append("content key duration: lease \(d.leaseSeconds) s, rental \(d.rentalSeconds) s, key type \(d.keyType) (\(d.keyTypeValue))")
            }
            if let hdcp = ckc.hdcp { lines.append("HDCP: \(hdcp)") }
            if let o = ckc.offlineKey {
                lines.append("offline key: content ID \(o.contentID), storage \(o.storageSeconds) s, playback \(o.playbackSeconds) s")
            }
            lines += Self.render(ckc.blocks)
            lines.append("check R1 matches: \(ckc.r1Matches ? "yes" : "NO")")
            lines.append("check returned tags match: \(ckc.returnedTagsMatch ? "yes" : "NO (\(ckc.mismatchedTags.joined(separator: " ")))")")
        }
        return lines.joined(separator: "\n")
    }

    private static func render(_ blocks: [Block]) -> [String] {
        blocks.map { "  \($0.tag) \($0.name ?? "(undefined)"): value \($0.valueLength), block \($0.blockLength): \($0.value)" }
    }

    private static func hex64(_ value: UInt64) -> String { hex(value, bytes: 8) }
    private static func hex32(_ value: UInt32) -> String { hex(UInt64(value), bytes: 4) }

    private static func hex(_ value: UInt64, bytes: Int) -> String {
        var writer = ByteWriter()
        writer.writeInteger(value, byteCount: bytes)
        return Hex.encode(writer.bytes)
    }
}
