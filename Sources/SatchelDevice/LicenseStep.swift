import Foundation
import SatchelAgent
import SatchelDownloads
import SatchelRights

/// The download engine's license step: an asset added with `--license` gets a persistent license from
/// the agent of the same data directory when its download starts, a renewal when it finishes near the license's
/// end, and a release when it is removed. Failures carry the license server's problem type; only those worth
/// retrying (the server failed or was unreachable) are retried under the Rule of Threes.
public struct LicenseStep: DownloadStep {
    let agent: Agent

    /// The step for the engine of `agent`'s data directory.
    public init(agent: Agent) {
        self.agent = agent
    }

    public func prepare(_ asset: DownloadAsset) async throws(DownloadFailure) {
        guard let request = asset.options.license, request.fairPlay == nil else { return }  // a FairPlay key: FairPlayStep's
        let id = request.assetID ?? asset.id
        do {
            if let current = try await agent.licenses().first(where: { $0.license.assetID == id }), current.license.persistent,
               [.valid, .inFuture].contains(current.evaluation.status) {
                return  // a persistent license that will play is already here
            }
            guard let token = request.token else {
                throw DownloadFailure.license(problem: "missing-entitlement", detail: "the asset was added without --token", retryable: false)
            }
            _ = try await agent.acquire(asset: id, token: token, persistent: true, server: request.server)
        } catch {
            throw .license(from: error, other: "agent")
        }
    }

    public func finished(_ asset: DownloadAsset) async {
        guard let request = asset.options.license, request.fairPlay == nil, let token = request.token else { return }
        let id = request.assetID ?? asset.id
        guard let current = try? await agent.licenses().first(where: { $0.license.assetID == id })?.license,
              current.rights.renewalDue(current.usage, at: Date()) else { return }
        _ = try? await agent.renew(asset: id, token: token)  // a failed renewal leaves the license as it was; sync retries
    }

    public func removed(_ asset: DownloadAsset) async {
        guard let request = asset.options.license, request.fairPlay == nil else { return }
        _ = try? await agent.release(asset: request.assetID ?? asset.id)  // owed and retried at the next contact when offline
    }
}

extension DownloadFailure {
    /// A license step's failure for `error`: the license server's problem type (retried only when worth it), a
    /// failure the step made itself as it is, else `other` as the problem, never retried.
    static func license(from error: any Error, other: String) -> DownloadFailure {
        switch error {
        case let error as AgentError: .license(problem: error.problemType, detail: error.description, retryable: error.isRetryable)
        case let error as DownloadFailure: error
        default: .license(problem: other, detail: "\(error)", retryable: false)
        }
    }
}
