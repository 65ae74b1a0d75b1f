import Foundation
import SatchelAgent
import SatchelBytes
import SatchelDownloads

/// The download engine's FairPlay step (an offline FairPlay download, as Apple's offline HLS playback describes it):
/// an asset added with a FairPlay license gets a persistable key when its download starts — an SPC from the device's
/// FairPlay client, the CKC from the license server, opened by the client (a CKC that answers another SPC is refused)
/// and kept sealed in the ``FairPlayKeyring`` —; when the asset is removed, a Sync SPC tells the server that the
/// download's offline key is gone (FairPlay's offline key sync), and the key is forgotten.
public struct FairPlayStep: DownloadStep {
    let agent: Agent
    let keyring: FairPlayKeyring
    let client: FairPlayClientFactory

    /// The step for `agent`'s data directory, keeping keys in `keyring`, with the FairPlay client `client` makes.
    public init(agent: Agent, keyring: FairPlayKeyring, client: @escaping FairPlayClientFactory = SimulatedFairPlayDevice.factory) {
        self.agent = agent
        self.keyring = keyring
        self.client = client
    }

    public func prepare(_ asset: DownloadAsset) async throws(DownloadFailure) {
        guard let request = asset.options.license, let fairPlay = request.fairPlay else { return }
        let id = request.assetID ?? asset.id
        do {
            // A persistable key that will play is already here; one that does not open (damaged, another device's) is replaced.
            if let kept = try? keyring.record(id), let status = try? await FairPlayRights.status(of: kept, client: client, at: Date()), status == .valid {
                return
            }
            guard let token = request.token else {
                throw DownloadFailure.license(problem: "missing-entitlement", detail: "the asset was added without --token", retryable: false)
            }
            guard let certificate = Data(base64Encoded: fairPlay.certificate) else {
                throw DownloadFailure.license(problem: "fairplay", detail: "the Application Certificate kept with the asset is not base64", retryable: false)
            }
            let hu = SimulatedFairPlayDevice.anonymizedID(of: await agent.deviceID ?? agent.dataDirectory)
            let requester = try client(Array(certificate), fairPlay.simulatorSecret, hu)
            let spc = try await requester.request(assetID: id, persistable: true)
            let answer = try await agent.fairPlayKey(spc: spc.spc, token: token, server: request.server)
            let key = try await requester.open(ckc: answer.ckc, context: spc.context)
            guard key.persistent else {
                throw DownloadFailure.license(problem: "not-persistable",
                                              detail: "the key server gave a streaming key, not one to keep: the asset's policy or the token does not allow offline play",
                                              retryable: false)
            }
            try keyring.keep(FairPlayKeyring.Record(assetID: id, certificate: fairPlay.certificate, simulatorSecret: fairPlay.simulatorSecret,
                                                    hu: Hex.encode(hu), ckc: Data(answer.ckc).base64EncodedString(), context: spc.context,
                                                    received: Date(), firstPlayback: nil, server: request.server))
        } catch {
            throw .license(from: error, other: "fairplay")
        }
    }

    public func removed(_ asset: DownloadAsset) async {
        guard let request = asset.options.license, request.fairPlay != nil else { return }
        let id = request.assetID ?? asset.id
        guard let kept = try? keyring.record(id) else { return }
        // The server learns that the download's offline key is gone (its records show the Sync SPC); out of reach,
        // the key is forgotten all the same.
        if let certificate = Data(base64Encoded: kept.certificate), let hu = try? Hex.decode(kept.hu, count: 20),
           let requester = try? client(Array(certificate), kept.simulatorSecret, hu) {
            if let key = try? await requester.open(ckc: Array(Data(base64Encoded: kept.ckc) ?? Data()), context: kept.context),
               let contentID = key.offlineContentID, let sync = try? await requester.syncRequest(assetID: id, contentID: contentID) {
                _ = try? await agent.fairPlayKey(spc: sync.spc, token: request.token, server: kept.server)
            }
            await requester.forget(context: kept.context)
        }
        try? keyring.remove(id)
    }
}
