import Crypto
import Foundation
import SatchelBytes
import SatchelSystem

/// The FairPlay keys a device keeps for its downloads: each CKC with the client state that opens it and the client's
/// credentials, sealed whole with the device key (another device, or another user reading the file, gets nothing),
/// one owner-only file per asset in `fairplay/` of the data directory. Each file is a few hundred bytes, written
/// once per download and once at its first play.
public struct FairPlayKeyring: Sendable {
    /// One kept key.
    public struct Record: Codable, Sendable, Equatable {
        /// The asset ID of the key (the `skd://` URI's, the license asset).
        public var assetID: String
        /// The app's Application Certificate, base64.
        public var certificate: String
        /// The software client's development DASk (hex), when it is the software client's key.
        public var simulatorSecret: String?
        /// The device's anonymized ID in its SPCs (hex).
        public var hu: String
        /// The CKC, base64.
        public var ckc: String
        /// The client state that opens the CKC.
        public var context: String
        /// When the key was received.
        public var received: Date
        /// When it first played (an offline key's playback window starts then).
        public var firstPlayback: Date?
        /// The license server it came from (nil: the registered one).
        public var server: String?
    }

    let directory: String
    let sealing: any SecretSealing

    /// The keyring of the data directory `dataDirectory`, sealed with `sealing` (the agent's `DeviceSecretBox`).
    public init(dataDirectory: String, sealing: any SecretSealing) {
        directory = (dataDirectory as NSString).appendingPathComponent("fairplay")
        self.sealing = sealing
    }

    /// The file of `assetID`: named by a digest, so that no asset ID names a path.
    func path(_ assetID: String) -> String {
        (directory as NSString).appendingPathComponent(Hex.encode(Array(SHA256.hash(data: Data(assetID.utf8))).prefix(16)) + ".key")
    }

    /// The key kept for `assetID`, if any; a file that does not open (edited, another device's) is an error.
    public func record(_ assetID: String) throws -> Record? {
        guard let data = FileManager.default.contents(atPath: path(assetID)) else { return nil }
        let opened = try sealing.open(String(decoding: data, as: UTF8.self))
        let record = try JSONCoding.decoder().decode(Record.self, from: Data(opened.utf8))
        guard record.assetID == assetID else { throw FairPlayKeyringError(description: "the FairPlay key file of \(assetID) holds another asset's key") }
        return record
    }

    /// Keeps `record` (replacing the asset's earlier key), owner-only, all or nothing.
    public func keep(_ record: Record) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let text = String(decoding: try JSONCoding.encoder().encode(record), as: UTF8.self)
        try AtomicFile.write(Array(try sealing.seal(text).utf8), to: path(record.assetID), mode: 0o600)
    }

    /// Forgets the key of `assetID` (nothing when there is none).
    public func remove(_ assetID: String) throws {
        guard FileManager.default.fileExists(atPath: path(assetID)) else { return }
        try FileManager.default.removeItem(atPath: path(assetID))
    }
}

/// A kept FairPlay key that cannot be used: damaged, another asset's, or without the credentials its client needs.
public struct FairPlayKeyringError: ProblemConvertible {
    /// What is wrong.
    public let description: String
    /// `fairplay-key`.
    public var code: String { "fairplay-key" }
}
