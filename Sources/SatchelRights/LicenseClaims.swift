import Crypto
import Foundation
import SatchelBytes

/// The claims of a device certificate: the server's statement that a device key belongs to a registered
/// device of a user. Signed by the license server (``SignedToken``).
public struct DeviceCertificateClaims: Codable, Sendable, Equatable {
    /// The device ID the server assigned.
    public var deviceID: String
    /// The user the device was registered for (the entitlement token's subject).
    public var user: String
    /// The device's public key.
    public var key: PublicKeyJWK
    /// When the certificate was issued (server time).
    public var issued: Date

    /// Creates claims.
    public init(deviceID: String, user: String, key: PublicKeyJWK, issued: Date) {
        self.deviceID = deviceID
        self.user = user
        self.key = key
        self.issued = issued
    }
}

/// What a device asks of the license server (`POST /licenses`, `/licenses/renew`, `/licenses/release`),
/// signed with the device key so the server knows the request comes from the certified device.
public struct DeviceRequestClaims: Codable, Sendable, Equatable {
    /// The device certificate (a signed token).
    public var certificate: String
    /// The asset (acquisition).
    public var assetID: String?
    /// Key IDs, hex (acquisition by key instead of asset).
    public var keyIDs: [String]?
    /// The license to renew or release.
    public var licenseID: String?
    /// Ask for a persistent (offline) license.
    public var persistent: Bool?
    /// A fresh random value: the answer repeats it, and the server refuses one it has seen.
    public var nonce: String
    /// The device's wall clock when it asked.
    public var time: Date
    /// The SHA-256 (hex) of the payload the request carries beside it (``digest(of:)``): signing the digest signs
    /// the payload.
    public var bodyDigest: String?
    /// Custom data for the license server's policy (the app's, not interpreted by the agent),
    /// signed with the rest of the request.
    public var customData: String?
    /// The method and path the request is for (``route(method:path:)``): the server answers it on that route only,
    /// so a request signed for one route (a permission) cannot be posted to another (a command's acknowledgement).
    public var route: String?
    /// The download toggle the device asks the backplane for (`POST /backplane/download-enabled`).
    public var downloadEnabled: Bool?

    /// Creates claims.
    public init(certificate: String, assetID: String? = nil, keyIDs: [String]? = nil, licenseID: String? = nil,
                persistent: Bool? = nil, nonce: String, time: Date, bodyDigest: String? = nil, customData: String? = nil,
                route: String? = nil, downloadEnabled: Bool? = nil) {
        self.downloadEnabled = downloadEnabled
        self.certificate = certificate
        self.assetID = assetID
        self.keyIDs = keyIDs
        self.licenseID = licenseID
        self.persistent = persistent
        self.nonce = nonce
        self.time = time
        self.bodyDigest = bodyDigest
        self.customData = customData
        self.route = route
    }

    /// A route as ``route`` names it: the method, a space, and the path relative to the server, without its query
    /// (`POST /backplane/commands/7/ack`).
    public static func route(method: String, path: String) -> String {
        method.uppercased() + " " + (path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? "")
    }

    /// The digest of a payload as ``bodyDigest`` carries it: SHA-256, lowercase hex.
    public static func digest(of payload: String) -> String {
        Hex.encode(Array(SHA256.hash(data: Array(payload.utf8))))
    }
}

/// The claims of a Satchel license, signed by the license server.
public struct LicenseClaims: Codable, Sendable, Equatable {
    /// The license ID (stable across renewals).
    public var licenseID: String
    /// The device it was issued to.
    public var deviceID: String
    /// The asset.
    public var assetID: String
    /// The content keys, sealed to the device's key.
    public var keys: [SealedKey]
    /// The rights.
    public var rights: Rights
    /// The server's time when it issued (or renewed) the license: the secure clock's anchor, and when a
    /// rental starts.
    public var serverTime: Date
    /// Where to renew (nil: not renewable).
    public var renewalURL: String?
    /// The request's nonce.
    public var nonce: String

    /// Creates claims.
    public init(licenseID: String, deviceID: String, assetID: String, keys: [SealedKey], rights: Rights, serverTime: Date,
                renewalURL: String?, nonce: String) {
        self.licenseID = licenseID
        self.deviceID = deviceID
        self.assetID = assetID
        self.keys = keys
        self.rights = rights
        self.serverTime = serverTime
        self.renewalURL = renewalURL
        self.nonce = nonce
    }
}

/// The license server's signed time (`GET /time`, and in every license).
public struct SignedTimeClaims: Codable, Sendable, Equatable {
    /// The server's time.
    public var time: Date
    /// The nonce the device sent, if any (so an old answer cannot be replayed).
    public var nonce: String?

    /// Creates claims.
    public init(time: Date, nonce: String?) {
        self.time = time
        self.nonce = nonce
    }
}

/// The license server's signed statement of a device's licenses (`POST /licenses/status`): which are active and
/// which were released, at its time. A device reconciles its store with it at each sync: a license the server
/// holds released is removed (a store copied back cannot bring it back once online), and a store whose sealed
/// state was lost keeps only what the server vouches for.
public struct LicenseStatusClaims: Codable, Sendable, Equatable {
    /// One license's state on the server.
    public struct Entry: Codable, Sendable, Equatable {
        /// The license ID.
        public var licenseID: String
        /// `active`, `renewed` or `released`.
        public var state: String

        /// Creates an entry.
        public init(licenseID: String, state: String) {
            self.licenseID = licenseID
            self.state = state
        }

        /// True when the license may still be used.
        public var isLive: Bool { state != "released" }
    }

    /// The device.
    public var deviceID: String
    /// Every license the server issued to it.
    public var licenses: [Entry]
    /// The server's time.
    public var time: Date
    /// The request's nonce.
    public var nonce: String

    /// Creates claims.
    public init(deviceID: String, licenses: [Entry], time: Date, nonce: String) {
        self.deviceID = deviceID
        self.licenses = licenses
        self.time = time
        self.nonce = nonce
    }
}
