/// The JSON bodies of the license server's device endpoints, shared by the server and the agent.

/// `POST /devices`: `{"publicKey": JWK, "name", "externalID"}` (the token in `Authorization: Bearer`).
public struct RegistrationRequest: Codable, Sendable, Equatable {
    /// The device's public key.
    public var publicKey: PublicKeyJWK
    /// A name for the device.
    public var name: String?
    /// The application's own device ID.
    public var externalID: String?
    /// The device's platform (`linux`, `ios`, …), as the operator sees it.
    public var platform: String?

    /// Creates a body.
    public init(publicKey: PublicKeyJWK, name: String?, externalID: String?, platform: String? = nil) {
        self.publicKey = publicKey
        self.name = name
        self.externalID = externalID
        self.platform = platform
    }
}

/// The answer to `POST /devices`: `{"deviceID", "certificate"}`, and — from a server with the backplane — whether the
/// device may download and the backplane's notice (`device-limit-reached`, `already-registered`).
public struct RegistrationAnswer: Codable, Sendable, Equatable {
    /// The device ID.
    public var deviceID: String
    /// The device certificate (a signed token).
    public var certificate: String
    /// Whether the device may download (absent: the server has no backplane).
    public var downloadEnabled: Bool?
    /// The backplane's notice for this registration, by its stable code.
    public var notice: String?

    /// Creates an answer.
    public init(deviceID: String, certificate: String, downloadEnabled: Bool? = nil, notice: String? = nil) {
        self.deviceID = deviceID
        self.certificate = certificate
        self.downloadEnabled = downloadEnabled
        self.notice = notice
    }
}

/// `POST /licenses`, `/licenses/renew`, `/licenses/release`: `{"request": compact JWS signed by the device}`.
public struct DeviceRequestEnvelope: Codable, Sendable, Equatable {
    /// The signed ``DeviceRequestClaims``.
    public var request: String

    /// Creates a body.
    public init(request: String) {
        self.request = request
    }
}

/// The answer to `POST /licenses` and `/licenses/renew`: `{"license": compact JWS}`.
public struct LicenseAnswer: Codable, Sendable, Equatable {
    /// The signed ``LicenseClaims``.
    public var license: String

    /// Creates an answer.
    public init(license: String) {
        self.license = license
    }
}

/// The answer to `POST /licenses/release`: `{"licenseID", "state"}`.
public struct ReleaseAnswer: Codable, Sendable, Equatable {
    /// The license.
    public var licenseID: String
    /// Its state now ("released").
    public var state: String

    /// Creates an answer.
    public init(licenseID: String, state: String) {
        self.licenseID = licenseID
        self.state = state
    }
}

/// The answer to `GET /time`: `{"time": compact JWS}`.
public struct TimeAnswer: Codable, Sendable, Equatable {
    /// The signed ``SignedTimeClaims``.
    public var time: String

    /// Creates an answer.
    public init(time: String) {
        self.time = time
    }
}

/// The answer to `POST /licenses/status`: `{"status": compact JWS}`.
public struct LicenseStatusAnswer: Codable, Sendable, Equatable {
    /// The signed ``LicenseStatusClaims``.
    public var status: String

    /// Creates an answer.
    public init(status: String) {
        self.status = status
    }
}
