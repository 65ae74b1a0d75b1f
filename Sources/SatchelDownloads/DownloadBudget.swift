import Foundation

/// The storage rules while bytes are being written: every chunk is checked against
/// `maxStorageAllowed` and `headroom` before it is written, so a download stops before crossing either.
final class DownloadBudget: @unchecked Sendable {
    private let lock = NSLock()
    private var used: Int64
    private let rules: DownloadRules
    private let freeSpace: @Sendable () -> Int64?

    init(used: Int64, rules: DownloadRules, freeSpace: @escaping @Sendable () -> Int64?) {
        self.used = used
        self.rules = rules
        self.freeSpace = freeSpace
    }

    /// Bytes the engine's files use now.
    var usedBytes: Int64 { lock.withLock { used } }

    /// Takes `count` bytes, or throws the rule that writing them would break.
    func reserve(_ count: Int64) throws(DownloadFailure) {
        let result: DownloadFailure? = lock.withLock {
            if used + count > rules.maxStorageAllowed { return .storageLimit(usedBytes: used, limit: rules.maxStorageAllowed) }
            if let free = freeSpace(), free - count < rules.headroom { return .headroom(freeBytes: free, headroom: rules.headroom) }
            used += count
            return nil
        }
        if let result { throw result }
    }

    /// Gives bytes back (a partial file restarted from zero).
    func release(_ count: Int64) {
        lock.withLock { used -= count }
    }
}

/// Live byte and file counts of the asset being downloaded, read by the engine's progress ticker.
final class LiveProgress: @unchecked Sendable {
    private let lock = NSLock()
    private var bytes: Int64
    private var complete: [Bool]

    init(scan: AssetStore.Scan) {
        bytes = scan.bytes
        complete = scan.complete
    }

    func add(_ count: Int64) { lock.withLock { bytes += count } }

    func markComplete(_ index: Int) { lock.withLock { complete[index] = true } }

    var snapshot: (bytes: Int64, complete: [Bool]) { lock.withLock { (bytes, complete) } }
}
