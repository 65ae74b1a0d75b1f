import Foundation
import Hummingbird
import SatchelFairPlay
import SatchelHTTP
import SatchelLicensing
import SatchelProtection

/// An RFC 9457 problem: a stable type, a status and a message a user can act on. Never a secret.
struct Problem: Error {
    let status: HTTPResponse.Status
    let type: String
    let detail: String

    /// The problem for any error a route can throw.
    init(_ error: any Error) {
        switch error {
        case let problem as Problem:
            self = problem
        case let error as LicensingError:
            let status: HTTPResponse.Status = switch error {
            case .missingEntitlement, .invalidEntitlement: .unauthorized
            case .notEntitled, .policyDenied: .forbidden
            case .unknownAsset: .notFound
            case .badRequest: .badRequest
            case .configuration, .storage: .internalServerError
            }
            self.init(status: status, type: error.code, detail: error.description)
        case let error as FairPlayError:
            let status: HTTPResponse.Status = switch error {
            case .streamingTargetNotAllowed, .clientLacksCapability: .forbidden
            case .cryptoFailure, .invalidPrivateKey, .invalidCertificate, .unsupportedRSAKeySize: .internalServerError
            default: .badRequest
            }
            self.init(status: status, type: "fairplay-" + error.code, detail: error.description)
        case let error as ProtectionError:
            self.init(status: .badRequest, type: "bad-request", detail: error.description)
        default:
            self.init(status: .internalServerError, type: "internal", detail: "internal error")
        }
    }

    init(status: HTTPResponse.Status, type: String, detail: String) {
        self.status = status
        self.type = type
        self.detail = detail
    }

    /// The application/problem+json response.
    var response: Response { ProblemDocument(status: status.code, type: type, detail: detail).response() }
}
