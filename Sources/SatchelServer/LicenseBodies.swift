import Foundation
import SatchelLicensing
import SatchelBytes

/// `POST /fps/license` as JSON: `{"spc", "assetId", "token"}`, or Apple's `fairplay-streaming-request`.
struct FairPlayLicenseRequest: Decodable {
    var spc: String?
    var assetId: String?
    var token: String?
    var customData: String?
    var appleRequest: AppleStreamingRequest?

    enum CodingKeys: String, CodingKey {
        case spc, assetId, token, customData
        case appleRequest = "fairplay-streaming-request"
    }
}

/// Apple's JSON protocol: `{"version": 1, "streaming-keys": [{"id", "uri", "spc"}]}`.
struct AppleStreamingRequest: Decodable {
    var version: Int?
    var streamingKeys: [StreamingKey]?

    struct StreamingKey: Decodable {
        /// Echoed back as sent (a number or a string).
        var id: JSONValue?
        var uri: String?
        var spc: String?
    }

    enum CodingKeys: String, CodingKey {
        case version
        case streamingKeys = "streaming-keys"
    }
}

/// The answer to Apple's JSON protocol.
struct AppleStreamingResponse: Encodable {
    var response: Body

    struct Body: Encodable {
        var version = 1
        var streamingKeys: [Key]

        enum CodingKeys: String, CodingKey {
            case version
            case streamingKeys = "streaming-keys"
        }
    }

    struct Key: Encodable {
        var id: JSONValue?
        var uri: String?
        var ckc: String
        /// Dual expiry: the download's content ID (the app may send Sync SPCs).
        var offlineContentID: String?

        enum CodingKeys: String, CodingKey {
            case id, uri, ckc
            case offlineContentID = "offline-content-id"
        }
    }

    enum CodingKeys: String, CodingKey {
        case response = "fairplay-streaming-response"
    }
}

/// `{"ckc": base64}`.
struct CKCAnswer: Encodable {
    var ckc: String
    /// True when the CKC carries dual expiry (the FairPlay Streaming Programming Guide: the server tells the app,
    /// which cannot read the CKC).
    var dualExpiry: Bool?
    /// Dual expiry: the download's content ID, which its Sync SPCs carry back.
    var offlineContentID: String?

    init(_ license: LicenseService.FairPlayLicense) {
        ckc = Data(license.ckc).base64EncodedString()
        dualExpiry = license.offlineContentID == nil ? nil : true
        offlineContentID = license.offlineContentID
    }
}

/// The optional `token` member of a JSON body (the Clear Key request carries its own members beside it).
struct TokenMember: Decodable {
    var token: String?
    /// The app's custom data for the license policy.
    var customData: String?
}
