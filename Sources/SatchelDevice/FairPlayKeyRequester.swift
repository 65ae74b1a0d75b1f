import Crypto
import Foundation
import SatchelBytes
import SatchelFairPlay

/// What a FairPlay client made for one key request: the SPC to send to the key server, and what only that client
/// uses to open the answer (secret: it holds the session key; kept sealed).
public struct FairPlayRequest: Sendable {
    /// The SPC.
    public var spc: [UInt8]
    /// The client's own state for opening the CKC that answers it.
    public var context: String

    /// A request.
    public init(spc: [UInt8], context: String) {
        self.spc = spc
        self.context = context
    }
}

/// A FairPlay content key opened from its CKC, with the rights the CKC's blocks carry. Times count from when the
/// key was received (a lease, a rental, an offline key's storage window) or from its first playback (an offline
/// key's playback window). A key the platform's own FairPlay client installed (`ContentKeySessionRequester` on
/// Apple platforms) is held by that client: it has no `key` here, its rights are the platform's to enforce, and its
/// download plays in the platform's player, not through the playback proxy.
public struct FairPlayKey: Sendable {
    /// The content key; nil when the platform's FairPlay client holds it.
    public var key: SecretBytes?
    /// The content IV.
    public var iv: [UInt8]
    /// The lease, in seconds from receipt (nil: none).
    public var leaseSeconds: UInt32?
    /// The rental, in seconds from receipt (nil: none).
    public var rentalSeconds: UInt32?
    /// The key may be kept for offline playback.
    public var persistent: Bool
    /// An offline key's storage window before its first playback, in seconds (nil: none).
    public var storageSeconds: UInt32?
    /// An offline key's playback window from its first playback, in seconds (nil: none).
    public var playbackSeconds: UInt32?
    /// An offline key's content ID (dual expiry: what its Sync SPC names).
    public var offlineContentID: [UInt8]?

    /// A key: `key` and `iv` as the CKC gives them (`key` nil when the platform's client holds it), and its rights.
    public init(key: SecretBytes?, iv: [UInt8], leaseSeconds: UInt32? = nil, rentalSeconds: UInt32? = nil, persistent: Bool,
                storageSeconds: UInt32? = nil, playbackSeconds: UInt32? = nil, offlineContentID: [UInt8]? = nil) {
        self.key = key
        self.iv = iv
        self.leaseSeconds = leaseSeconds
        self.rentalSeconds = rentalSeconds
        self.persistent = persistent
        self.storageSeconds = storageSeconds
        self.playbackSeconds = playbackSeconds
        self.offlineContentID = offlineContentID
    }
}

/// The seam between the download engine and a FairPlay client: make an SPC for a key, install (or open) the CKC that
/// answers it. ``SimulatedFairPlayDevice`` is Satchel's software client (development credentials, every platform);
/// on Apple platforms `ContentKeySessionRequester` is the platform's own, over `AVContentKeySession`.
public protocol FairPlayKeyRequester: Sendable {
    /// An SPC for the key of `assetID` (the asset ID of its `skd://` URI); `persistable`: a key to keep for offline play.
    func request(assetID: String, persistable: Bool) async throws -> FairPlayRequest
    /// A Sync SPC that reports the download whose offline key has `contentID` (16 bytes) deleted.
    func syncRequest(assetID: String, contentID: [UInt8]) async throws -> FairPlayRequest
    /// Opens (or installs) `ckc`, the answer to the request made with `context`: refused unless it answers that very
    /// request. Asked again with the same CKC and context, it answers the same key.
    func open(ckc: [UInt8], context: String) async throws -> FairPlayKey
    /// Lets go of what the client keeps for the key of the request made with `context` (its download was removed).
    func forget(context: String) async
}

extension FairPlayKeyRequester {
    /// Nothing kept outside the CKC: nothing to let go of.
    public func forget(context: String) async {}
}

/// Satchel's software FairPlay client as the engine's requester: SPCs made and CKCs opened as Apple's guide lays
/// them out, with credentials whose DASk you hold (Apple's development credentials or test credentials of your own).
/// It cannot take part in a production FairPlay deployment; on Linux it is how a FairPlay download plays.
public struct SimulatedFairPlayDevice: FairPlayKeyRequester {
    private let simulator: DeviceSimulator
    /// The device's anonymized ID in every SPC (a real device's is fixed too).
    private let hu: [UInt8]

    /// A client for the app whose Application Certificate is `certificate` (DER or PEM), with the development DASk
    /// `dask` (16 bytes); `hu` names the device (20 bytes; a random one when nil).
    public init(certificate: [UInt8], dask: SecretBytes, hu: [UInt8]? = nil) throws {
        simulator = try DeviceSimulator(certificate: certificate, dFunction: DevelopmentDFunction(dask: dask))
        self.hu = hu ?? SecureRandom.bytes(20)
    }

    public func request(assetID: String, persistable: Bool) throws -> FairPlayRequest {
        var options = DeviceSimulator.Options(assetID: Array(assetID.utf8))
        options.capabilities = Capabilities(hdcpEnforcement: false, offlineKey: persistable)
        // The playback state: a key server answers with the key's duration (lease, rental, persistence) only to a
        // request that carries one.
        options.playbackState = MediaPlaybackState(creationDate: UInt32(clamping: Int(Date().timeIntervalSince1970)), state: .readyToStart,
                                                   sessionID: UInt64.random(in: 0...UInt64.max))
        return try make(options)
    }

    public func syncRequest(assetID: String, contentID: [UInt8]) throws -> FairPlayRequest {
        var options = DeviceSimulator.Options(assetID: Array(assetID.utf8))
        options.capabilities = Capabilities(hdcpEnforcement: false, offlineKey: true)
        options.sync = SyncInfo(contentID: contentID, durationToExpiry: 0)
        return try make(options)
    }

    private func make(_ options: DeviceSimulator.Options) throws -> FairPlayRequest {
        var options = options
        options.hu = hu
        let (spc, session) = try simulator.makeSPC(options)
        return FairPlayRequest(spc: spc, context: String(decoding: try JSONCoding.encoder().encode(session), as: UTF8.self))
    }

    public func open(ckc: [UInt8], context: String) throws -> FairPlayKey {
        let session = try JSONCoding.decoder().decode(DeviceSimulator.Session.self, from: Data(context.utf8))
        let opened = try DeviceSimulator.openCKC(ckc, session: session)
        var key = FairPlayKey(key: opened.contentKey, iv: opened.contentIV, persistent: false)
        if let duration = opened.duration {
            switch duration.keyType {
            case .leaseOnly: key.leaseSeconds = duration.leaseSeconds
            case .rentalOnly, .persistableLimited: key.rentalSeconds = duration.rentalSeconds
            case .leaseAndRental: (key.leaseSeconds, key.rentalSeconds) = (duration.leaseSeconds, duration.rentalSeconds)
            default: break
            }
            key.persistent = duration.keyType == .persistableLimited || duration.keyType == .persistableUnlimited
        }
        if let offline = opened.offlineKey {
            key.persistent = true
            key.storageSeconds = offline.storageSeconds == 0 ? nil : offline.storageSeconds
            key.playbackSeconds = offline.playbackSeconds == 0 ? nil : offline.playbackSeconds
            key.offlineContentID = offline.contentID
        }
        return key
    }
}

/// Makes the FairPlay client for a key's credentials: the app's Application Certificate, the software client's
/// development DASk (hex; nil on a device with a FairPlay client of its own), and the device's anonymized ID.
public typealias FairPlayClientFactory = @Sendable (_ certificate: [UInt8], _ simulatorSecret: String?, _ hu: [UInt8]) throws -> any FairPlayKeyRequester

extension SimulatedFairPlayDevice {
    /// Satchel's software client for a key's credentials; it needs the development DASk.
    public static let factory: FairPlayClientFactory = { certificate, secret, hu in
        guard let secret else {
            throw FairPlayKeyringError(description: "the software FairPlay client needs the development DASk (--fps-simulator-dask)")
        }
        return try SimulatedFairPlayDevice(certificate: certificate, dask: SecretBytes(hex: secret, count: 16), hu: hu)
    }

    /// The anonymized ID a device of ID `deviceID` gives in its SPCs: 20 bytes of a digest, the same every time.
    public static func anonymizedID(of deviceID: String) -> [UInt8] {
        Array(SHA256.hash(data: Data(("satchel-fairplay-device:" + deviceID).utf8)).prefix(20))
    }
}
