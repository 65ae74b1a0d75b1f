import Logging

/// The engine's decisions as log lines, one per event: why an asset waits, each
/// attempt, each retry and its reason, completions, expiries, upgrades, damage. Failures describe URLs without
/// their query strings (``DownloadFailure/description``); headers and tokens are never in an event.
enum EngineLog {
    static func log(_ event: DownloadEvent, to logger: Logger) {
        switch event {
        case let .added(id):
            logger.info("asset added", metadata: ["asset": "\(id)"])
        case let .removed(id):
            logger.info("asset removed", metadata: ["asset": "\(id)"])
        case let .retriesCleared(id):
            logger.info("retry count cleared", metadata: ["asset": "\(id)"])
        case let .stateChanged(id, state):
            logger.debug("asset state", metadata: ["asset": "\(id)", "state": "\(state.rawValue)"])
        case let .started(id):
            logger.info("attempt started", metadata: ["asset": "\(id)"])
        case let .processing(id, fraction):
            logger.debug("processing", metadata: ["asset": "\(id)", "fraction": "\(fraction)"])
        case let .finished(id):
            logger.info("asset complete", metadata: ["asset": "\(id)"])
        case let .error(id, failure, willRetry):
            logger.log(level: willRetry ? .warning : .error, "attempt failed: \(failure.description)",
                       metadata: ["asset": "\(id)", "code": "\(failure.code)", "next": "\(willRetry ? "retry" : "blocked until clearRetryCount")"])
        case let .warning(id, message):
            logger.warning("\(message)", metadata: ["asset": "\(id)"])
        case let .authorizationRequired(id, status):
            logger.warning("the origin wants fresh credentials (HTTP \(status)); waiting for updateURL", metadata: ["asset": "\(id)"])
        case let .damaged(id, reason):
            logger.error("damaged index record; files kept: \(reason)", metadata: ["asset": "\(id)"])
        case .dataStoreUpgradeBegan:
            logger.notice("data store upgrade began")
        case let .dataStoreUpgradeFinished(count):
            logger.notice("data store upgrade finished", metadata: ["assets": "\(count)"])
        case let .expiredAssetsReset(ids):
            logger.info("availability window closed; files deleted", metadata: ["assets": "\(ids.joined(separator: ","))"])
        case let .storageFailed(message):
            logger.critical("the index cannot be read or written; the run stopped: \(message)")
        case let .fileKept(id, path, bytes):
            logger.debug("kept a file the player fetched", metadata: ["asset": "\(id)", "path": "\(path)", "bytes": "\(bytes)"])
        case let .engineStatusChanged(status):
            logger.debug("engine \(status)")
        case .progress, .queueChanged:
            break
        }
    }

    /// Why an asset waits (a rule holds it).
    static func held(_ id: String, by rule: DownloadFailure, logger: Logger) {
        logger.info("asset waits: \(rule.description)", metadata: ["asset": "\(id)", "rule": "\(rule.code)"])
    }
}
