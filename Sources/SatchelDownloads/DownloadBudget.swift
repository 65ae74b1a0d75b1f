import Foundation
import SatchelBytes
import SatchelSystem

/// The storage rules while bytes are being written: every chunk is checked against
/// `maxStorageAllowed` and `headroom` before it is written, so a download stops before crossing either.
package final class DownloadBudget: Sendable {
    private let used: Locked<Int64>
    private let rules: DownloadRules
    private let freeSpace: @Sendable () -> Int64?

    init(used: Int64, rules: DownloadRules, freeSpace: @escaping @Sendable () -> Int64?) {
        self.used = Locked(used)
        self.rules = rules
        self.freeSpace = freeSpace
    }

    /// Bytes the engine's files use now.
    package var usedBytes: Int64 { used.current }

    /// Takes `count` bytes, or throws the rule that writing them would break.
    package func reserve(_ count: Int64) throws(DownloadFailure) {
        let (rules, freeSpace) = (rules, freeSpace)
        let result: DownloadFailure? = used.withLock { used in
            if used + count > rules.maxStorageAllowed { return .storageLimit(usedBytes: used, limit: rules.maxStorageAllowed) }
            if let free = freeSpace(), free - count < rules.headroom { return .headroom(freeBytes: free, headroom: rules.headroom) }
            used += count
            return nil
        }
        if let result { throw result }
    }

    /// Gives bytes back (a partial file restarted from zero).
    package func release(_ count: Int64) {
        used.withLock { $0 -= count }
    }
}

/// Live byte and file counts of the asset being downloaded, read by the engine's progress ticker.
package final class LiveProgress: Sendable {
    private let state: Locked<(bytes: Int64, complete: [Bool])>

    init(scan: AssetStore.Scan) {
        state = Locked((scan.bytes, scan.complete))
    }

    /// Counts bytes written (negative: bytes discarded).
    package func add(_ count: Int64) { state.withLock { $0.bytes += count } }

    /// Marks the plan's file `index` complete.
    package func markComplete(_ index: Int) { state.withLock { $0.complete[index] = true } }

    /// Bytes on disk (and counted as they arrive).
    package var bytes: Int64 { state.withLock { $0.bytes } }

    /// Bytes on disk and the files complete.
    package var snapshot: (bytes: Int64, complete: [Bool]) { state.current }
}
