import Foundation
import SatchelAgent
import SatchelBackplane
import SatchelDownloads

/// The download engine's permission step (before the engine starts an asset it asks the backplane): a
/// refusal blocks the asset with the backplane's reason; a backplane that cannot be reached leaves the asset
/// waiting (pending on permission), downloading nothing. A device the backplane disabled or killed (as its sealed
/// state says) is refused without asking. A removed asset's grant is given back.
public struct PermissionStep: DownloadStep {
    let agent: Agent

    /// The step for the engine of `agent`'s data directory.
    public init(agent: Agent) {
        self.agent = agent
    }

    public func prepare(_ asset: DownloadAsset) async throws(DownloadFailure) {
        let id = asset.options.license?.assetID ?? asset.id
        let answer: BackplanePermissionAnswer
        do {
            let status = try await agent.backplane.status()
            if status.killed { throw DownloadFailure.permissionRefused(reason: PermissionRefusal.deviceKilled.rawValue, detail: PermissionRefusal.deviceKilled.text) }
            answer = try await agent.backplane.permission(asset: id)
        } catch let error as DownloadFailure {
            throw error
        } catch let error as AgentError {
            if error.isRetryable { throw .permissionPending(error.description) }
            if error.problemType == BackplaneError.deviceKilled("").code {
                throw .permissionRefused(reason: PermissionRefusal.deviceKilled.rawValue, detail: PermissionRefusal.deviceKilled.text)
            }
            throw .permissionRefused(reason: error.problemType, detail: error.description)
        } catch {
            throw .permissionPending("\(error)")
        }
        guard answer.granted else {
            let reason = answer.reason ?? .deviceNotEnabled
            throw .permissionRefused(reason: reason.rawValue, detail: reason.text)
        }
    }

    public func removed(_ asset: DownloadAsset) async {
        // Its grant given back (best effort: offline, the grant stays until the operator's delete or wipe).
        try? await agent.backplane.releasePermission(asset: asset.options.license?.assetID ?? asset.id)
    }
}
