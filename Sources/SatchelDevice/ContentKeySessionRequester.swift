#if canImport(AVFoundation)
import AVFoundation
import Crypto
import Foundation
import SatchelBytes

/// The platform's FairPlay client as the download engine's requester, on Apple platforms: an `AVContentKeySession`
/// makes the SPC (a persistable key's, for a download) and installs the CKC the license server answers, keeping the
/// persistable key it makes of it in `storage` (owner-only, one file per asset, named by a digest). The content key
/// never reaches Satchel: the download plays in AVPlayer, whose key requests the same ``session`` answers from the
/// kept key (add the `AVURLAsset` with `session.addContentKeyRecipient(_:)`), and the key's rights are the CKC's,
/// enforced by the platform. Give ``factory`` to `FairPlayStep`, `FairPlayRights` and `AgentStreamSlots`.
///
/// Compiled only where AVFoundation is; Satchel's tests run the same seam with ``SimulatedFairPlayDevice`` and with a
/// client that, like this one, holds its keys.
public final class ContentKeySessionRequester: NSObject, FairPlayKeyRequester, AVContentKeySessionDelegate, @unchecked Sendable {
    /// The session: a player's key requests for a downloaded asset are answered from the kept key.
    public let session: AVContentKeySession
    private let certificate: Data
    private let storage: URL
    /// Every mutable member below is touched on this queue only (the session's delegate queue).
    private let queue = DispatchQueue(label: "dev.satchel.fairplay-keys")
    /// Key requests asked for by ``request(assetID:persistable:)``, by `skd://` URI, until the session provides them.
    private var waiting: [String: (persistable: Bool, continuation: CheckedContinuation<AVContentKeyRequest, any Error>)] = [:]
    /// Key requests whose SPC was made, by request context, until their CKC comes.
    private var pending: [String: AVContentKeyRequest] = [:]

    /// A client for the app whose Application Certificate is `certificate` (DER), keeping persistable keys in
    /// `storage` (made owner-only when absent).
    public init(certificate: [UInt8], storage: URL) throws {
        try FileManager.default.createDirectory(at: storage, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        self.certificate = Data(certificate)
        self.storage = storage
        session = AVContentKeySession(keySystem: .fairPlayStreaming)
        super.init()
        session.setDelegate(self, queue: queue)
    }

    /// This client for every key, whatever credentials the download names (the platform's client has its own).
    public var factory: FairPlayClientFactory { { [self] _, _, _ in self } }

    public func request(assetID: String, persistable: Bool) async throws -> FairPlayRequest {
        let identifier = "skd://" + assetID
        let keyRequest = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<AVContentKeyRequest, any Error>) in
            queue.async {
                if let earlier = self.waiting.updateValue((persistable, continuation), forKey: identifier) {
                    earlier.continuation.resume(throwing: FairPlayKeyringError(description: "a newer request for the key of \(assetID) replaced this one"))
                }
                self.session.processContentKeyRequest(withIdentifier: identifier, initializationData: nil, options: nil)
            }
        }
        let spc = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data, any Error>) in
            keyRequest.makeStreamingContentKeyRequestData(forApp: certificate, contentIdentifier: Data(assetID.utf8),
                                                          options: [AVContentKeyRequestProtocolVersionsKey: [1]]) { data, error in
                if let data {
                    continuation.resume(returning: data)
                } else {
                    continuation.resume(throwing: error ?? FairPlayKeyringError(description: "the platform made no SPC for the key of \(assetID)"))
                }
            }
        }
        let context = UUID().uuidString + ":" + assetID
        queue.sync { pending[context] = keyRequest }
        return FairPlayRequest(spc: Array(spc), context: context)
    }

    public func syncRequest(assetID: String, contentID: [UInt8]) async throws -> FairPlayRequest {
        throw FairPlayKeyringError(description: "the platform's FairPlay client reports a deleted offline key itself")
    }

    public func open(ckc: [UInt8], context: String) async throws -> FairPlayKey {
        let assetID = try Self.assetID(of: context)
        let file = file(assetID)
        guard let request = queue.sync(execute: { pending.removeValue(forKey: context) }) else {
            // Installed before (by this process or an earlier one): the kept key answers the player.
            guard FileManager.default.fileExists(atPath: file.path) else {
                throw FairPlayKeyringError(description: "the platform's FairPlay client keeps no key for \(assetID)")
            }
            return FairPlayKey(key: nil, iv: [], persistent: true)
        }
        guard let persistable = request as? AVPersistableContentKeyRequest else {
            request.processContentKeyResponse(AVContentKeyResponse(fairPlayStreamingKeyResponseData: Data(ckc)))
            return FairPlayKey(key: nil, iv: [], persistent: false)
        }
        let key = try persistable.persistableContentKey(fromKeyVendorResponse: Data(ckc), options: nil)
        try key.write(to: file, options: .atomic)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        persistable.processContentKeyResponse(AVContentKeyResponse(fairPlayStreamingKeyResponseData: key))
        return FairPlayKey(key: nil, iv: [], persistent: true)
    }

    public func forget(context: String) async {
        guard let assetID = try? Self.assetID(of: context) else { return }
        try? FileManager.default.removeItem(at: file(assetID))
    }

    // MARK: The session's delegate (on `queue`)

    /// A key request from the session: one this client asked for goes on (as a persistable key's, for a download); a
    /// player's for a kept key is answered with it; any other is refused.
    public func contentKeySession(_ session: AVContentKeySession, didProvide keyRequest: AVContentKeyRequest) {
        guard let identifier = keyRequest.identifier as? String else { return }
        if let asked = waiting[identifier] {
            guard asked.persistable else {
                waiting.removeValue(forKey: identifier)?.continuation.resume(returning: keyRequest)
                return
            }
            do { try keyRequest.respondByRequestingPersistableContentKeyRequest() } catch {
                waiting.removeValue(forKey: identifier)?.continuation.resume(throwing: error)
            }
        } else if identifier.hasPrefix("skd://"), let key = FileManager.default.contents(atPath: file(String(identifier.dropFirst(6))).path) {
            // A player's request for a downloaded asset's key.
            keyRequest.processContentKeyResponse(AVContentKeyResponse(fairPlayStreamingKeyResponseData: key))
        } else {
            keyRequest.processContentKeyResponseError(FairPlayKeyringError(description: "no FairPlay key is kept for \(identifier)"))
        }
    }

    /// The persistable key request a download's request became: its SPC is made next.
    public func contentKeySession(_ session: AVContentKeySession, didProvide keyRequest: AVPersistableContentKeyRequest) {
        guard let identifier = keyRequest.identifier as? String else { return }
        waiting.removeValue(forKey: identifier)?.continuation.resume(returning: keyRequest)
    }

    /// A key request that failed: the download waiting for it gets the error.
    public func contentKeySession(_ session: AVContentKeySession, contentKeyRequest keyRequest: AVContentKeyRequest, didFailWithError err: any Error) {
        guard let identifier = keyRequest.identifier as? String else { return }
        waiting.removeValue(forKey: identifier)?.continuation.resume(throwing: err)
    }

    // MARK: Kept keys

    /// The asset ID a request context names (`UUID:assetID`).
    private static func assetID(of context: String) throws -> String {
        guard let colon = context.firstIndex(of: ":"), context.index(after: colon) < context.endIndex else {
            throw FairPlayKeyringError(description: "not a request of the platform's FairPlay client")
        }
        return String(context[context.index(after: colon)...])
    }

    /// The file of `assetID`'s persistable key: named by a digest, so that no asset ID names a path.
    private func file(_ assetID: String) -> URL {
        storage.appendingPathComponent(Hex.encode(Array(SHA256.hash(data: Data(assetID.utf8)).prefix(16))) + ".fairplay-key")
    }
}
#endif
