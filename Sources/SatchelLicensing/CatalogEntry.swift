import Foundation
import SatchelBytes
import SatchelFairPlay
import SatchelProtection

/// One asset of a catalogue import: its ID, its keys with their IVs, its policy. A catalogue file is JSON Lines,
/// one entry a line:
///
/// `{"assetID":"movie-1","keys":[{"keyID":"…32 hex…","key":"…32 hex…","iv":"…32 hex…"}],"policy":{"rentalSeconds":172800,"offline":true}}`
///
/// `fairPlayAssetID` is optional (the asset ID by default); the policy's fields are those of ``AssetPolicy``, each
/// optional (a missing policy is the default one: online only).
public struct CatalogEntry: Sendable {
    /// The asset.
    public var assetID: String
    /// The asset ID inside FairPlay SPCs, or nil for the asset ID.
    public var fairPlayAssetID: String?
    /// The asset's keys (1 to ``maximumKeys``).
    public var keys: [ContentKey]
    /// The asset's policy.
    public var policy: AssetPolicy

    /// The most keys one asset holds.
    public static let maximumKeys = LicensingQueries.maxKeysPerAsset

    /// An entry; its IDs and keys are checked.
    public init(assetID: String, fairPlayAssetID: String? = nil, keys: [ContentKey], policy: AssetPolicy) throws(LicensingError) {
        guard !assetID.isEmpty, assetID.utf8.count <= 200 else { throw .badRequest("an asset ID is 1 to 200 bytes") }
        if let fairPlayAssetID, fairPlayAssetID.isEmpty || fairPlayAssetID.utf8.count > 200 { throw .badRequest("a FairPlay asset ID is 1 to 200 bytes") }
        guard (1...Self.maximumKeys).contains(keys.count) else { throw .badRequest("an asset has 1 to \(Self.maximumKeys) keys") }
        guard Set(keys.map(\.keyID)).count == keys.count else { throw .badRequest("a key ID appears twice in asset \(assetID)") }
        (self.assetID, self.fairPlayAssetID, self.keys, self.policy) = (assetID, fairPlayAssetID, keys, policy)
    }

    /// An entry read from one line of a catalogue (JSON). Errors say what is wrong, never a key's value.
    public init(line: some StringProtocol) throws(LicensingError) {
        let wire: Wire
        do { wire = try JSONCoding.decoder().decode(Wire.self, from: Data(line.utf8)) } catch {
            throw .badRequest("not a catalogue entry: expected {\"assetID\", \"keys\": [{\"keyID\", \"key\", \"iv\"}], \"policy\"} (\(Self.reason(error)))")
        }
        var keys: [ContentKey] = []
        for (index, key) in wire.keys.enumerated() {
            do {
                let iv = try Hex.decode(key.iv, count: 16)
                keys.append(try ContentKey(keyID: KeyID(hex: key.keyID), key: SecretBytes(Hex.decode(key.key, count: 16)), iv: iv))
            } catch {
                throw .badRequest("key \(index + 1) of asset \(wire.assetID.prefix(200)): keyID, key and iv are 32 hex digits each")
            }
        }
        try self.init(assetID: wire.assetID, fairPlayAssetID: wire.fairPlayAssetID, keys: keys, policy: wire.policy?.policy ?? AssetPolicy())
    }

    /// Where a JSON decoding error is, without the text it read.
    private static func reason(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "not JSON" }
        switch error {
        case let .keyNotFound(key, _): return "\(key.stringValue) is missing"
        case let .typeMismatch(_, context), let .valueNotFound(_, context):
            return "\(context.codingPath.map(\.stringValue).joined(separator: ".")) has the wrong type"
        case .dataCorrupted: return "not JSON"
        @unknown default: return "not JSON"
        }
    }

    private struct Wire: Decodable {
        struct Key: Decodable { var keyID: String; var key: String; var iv: String }
        var assetID: String
        var fairPlayAssetID: String?
        var keys: [Key]
        var policy: PolicyWire?
    }

    /// A policy with every field optional.
    private struct PolicyWire: Decodable {
        var notBefore: Date?, notAfter: Date?, leaseSeconds: UInt32?, rentalSeconds: UInt32?, persist: Bool?, persistSeconds: UInt32?
        var offlineContentID: String?, storageSeconds: UInt32?, playbackSeconds: UInt32?, hdcp: HDCPRequirement?, allowAirPlay: Bool?
        var offline: Bool?, renewalSeconds: UInt32?

        var policy: AssetPolicy {
            AssetPolicy(notBefore: notBefore, notAfter: notAfter, leaseSeconds: leaseSeconds, rentalSeconds: rentalSeconds, persist: persist ?? false,
                        persistSeconds: persistSeconds, offlineContentID: offlineContentID, storageSeconds: storageSeconds,
                        playbackSeconds: playbackSeconds, hdcp: hdcp, allowAirPlay: allowAirPlay ?? false, offline: offline ?? false,
                        renewalSeconds: renewalSeconds)
        }
    }
}
