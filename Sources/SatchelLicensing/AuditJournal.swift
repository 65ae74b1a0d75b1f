import Foundation
import Logging
import SatchelBytes
import SatchelSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The audit's write-ahead journal beside a SQLite store: a license's record is appended here (one `write`, under a
/// lock) before the license is answered, and folded into the database in batches soon after. A record written is
/// durable against a crash of the process, as a SQLite commit in write-ahead mode with `synchronous = NORMAL` is,
/// without waiting for the database's single writer: the license path no longer queues behind it.
///
/// Two files take turns (`audit-0.journal`, `audit-1.journal`, mode 0600): a fold switches appends to the other file,
/// writes what the first one held, and only then empties it. Records left by a process that died are read back when
/// the journal opens and folded again (each carries its row ID, so a record folded twice is one row). One process at
/// a time owns the journal (`audit.lock`); another process on the same data directory writes to the database directly.
final class AuditJournal: Sendable {
    /// Records held in memory and the journals at most, those a fold is writing included; beyond it a record waits for
    /// a fold to make room, and its license is refused when none does for long (the database is unreachable), rather
    /// than memory growing without bound.
    static let maximumPending = 200_000

    private struct State {
        var active = 0
        var pending: [AuditRecord] = []
        /// A fold has been asked for and has not yet found the journal empty.
        var scheduled = false
        /// Each file's length: a write that fails half done is cut back to it.
        var sizes: [Int] = [0, 0]
        var appended = 0
        var folded = 0
        /// Records a fold has taken and not yet written: they count toward the limit until it ends.
        var inFold = 0
    }

    private let descriptors: [Int32]
    private let lock: Int32
    private let paths: [String]
    private let limit: Int
    private let state: Locked<State>

    /// Opens the journal in `directory`, reading back what a previous process left; nil when another process owns it.
    /// Damage found (a record cut short by a crash, or bytes that are no record) is cut off the file, kept beside it in
    /// `audit-N.journal.damaged` and logged. At most `limit` records wait for the database.
    static func claim(directory: String, limit: Int = maximumPending) throws(SystemError) -> AuditJournal? {
        let lockPath = (directory as NSString).appendingPathComponent("audit.lock")
        try PrivateFiles.file(lockPath)
        let lock = Foundation.open(lockPath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, PrivateFiles.fileMode)
        guard lock >= 0 else { throw SystemError("open the audit journal's lock", path: lockPath, errno: errno) }
        guard flock(lock, LOCK_EX | LOCK_NB) == 0 else {
            close(lock)
            return nil
        }
        var descriptors: [Int32] = []
        var recovered: [AuditRecord] = []
        var sizes: [Int] = []
        let paths = (0..<2).map { (directory as NSString).appendingPathComponent("audit-\($0).journal") }
        for path in paths {
            try PrivateFiles.file(path)
            let descriptor = Foundation.open(path, O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, PrivateFiles.fileMode)
            guard descriptor >= 0 else {
                let failure = errno
                for open in descriptors + [lock] { close(open) }
                throw SystemError("open the audit journal", path: path, errno: failure)
            }
            descriptors.append(descriptor)
            let bytes: [UInt8]
            do { bytes = try readAll(descriptor, path: path) } catch {
                for open in descriptors + [lock] { close(open) }
                throw error
            }
            let (records, intact) = AuditRecord.decodeAll(bytes)
            recovered += records
            sizes.append(intact)
            if intact < bytes.count {
                // Later records must follow whole ones: the damage leaves the file, kept aside for the operator.
                let aside = path + ".damaged"
                try? PrivateFiles.file(aside)
                try? Data(bytes[intact...]).write(to: URL(fileURLWithPath: aside))
                _ = ftruncate(descriptor, off_t(intact))
                Logger(label: "satchel.audit").warning("the audit journal ended in damage (a record cut short by a crash, or worse); the intact records were kept",
                                                       metadata: ["journal": "\(path)", "intact": "\(records.count)", "bytes cut": "\(bytes.count - intact)",
                                                                  "kept in": "\(aside)"])
            }
        }
        return AuditJournal(descriptors: descriptors, lock: lock, paths: paths, limit: limit, recovered: recovered, sizes: sizes)
    }

    private init(descriptors: [Int32], lock: Int32, paths: [String], limit: Int, recovered: [AuditRecord], sizes: [Int]) {
        self.descriptors = descriptors
        self.lock = lock
        self.paths = paths
        self.limit = limit
        state = Locked(State(pending: recovered, sizes: sizes, appended: recovered.count))
    }

    /// The whole file behind `descriptor`, read from its start.
    private static func readAll(_ descriptor: Int32, path: String) throws(SystemError) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        var offset: off_t = 0
        while true {
            let count = chunk.withUnsafeMutableBytes { buffer in buffer.baseAddress.map { pread(descriptor, $0, buffer.count, offset) } ?? 0 }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw SystemError("read the audit journal", path: path, errno: errno) }
            guard count > 0 else { return bytes }
            bytes += chunk[0..<count]
            offset += off_t(count)
        }
    }

    deinit {
        for descriptor in descriptors + [lock] { close(descriptor) }
    }

    /// Lets another process claim the journal (this one's store is closed).
    func release() {
        _ = flock(lock, LOCK_UN)
    }

    /// What an append did.
    enum Appended: Equatable {
        /// The record survives a crash of the process; the caller starts a fold when `foldWanted` (none is under way).
        case kept(foldWanted: Bool)
        /// The journal holds as many records as it may: nothing was appended.
        case full
    }

    /// Appends a record unless the journal is full.
    func append(_ record: AuditRecord) throws(LicensingError) -> Appended {
        let bytes = record.encoded
        let outcome = state.withLock { (state: inout State) -> Result<Appended, LicensingError> in
            guard state.pending.count + state.inFold < limit else { return .success(.full) }
            let file = state.active
            do {
                try Self.appendAll(bytes, to: descriptors[file], path: paths[file])
            } catch {
                // Nothing half written stays in front of the next record.
                _ = ftruncate(descriptors[file], off_t(state.sizes[file]))
                return .failure(.storage("the audit record could not be kept: \(error)"))
            }
            state.sizes[file] += bytes.count
            state.pending.append(record)
            state.appended += 1
            defer { state.scheduled = true }
            return .success(.kept(foldWanted: !state.scheduled))
        }
        return try outcome.get()
    }

    /// True (a fold asked for) when records wait; false (none asked for) when none do.
    func needsFold() -> Bool {
        state.withLock { state in
            state.scheduled = !state.pending.isEmpty
            return state.scheduled
        }
    }

    /// Records appended so far and records folded so far.
    var counts: (appended: Int, folded: Int) { state.withLock { ($0.appended, $0.folded) } }

    /// The records to fold, appends switched to the other file; nil (and no fold asked for any more) when none wait.
    func take() -> (records: [AuditRecord], file: Int)? {
        state.withLock { state in
            guard !state.pending.isEmpty else {
                state.scheduled = false
                return nil
            }
            let taken = (state.pending, state.active)
            state.inFold = state.pending.count
            state.pending = []
            state.active = 1 - state.active
            return taken
        }
    }

    /// The records taken are in the database: the file they were appended to is emptied, and the other one too when
    /// it holds bytes and nothing waits (what it holds was folded: a fold that failed, or a previous process's records).
    /// The file taken is emptied outside the lock: no append reaches it until the next `take` (folds run one at a
    /// time), and a truncation waits for the file system's own journal now and then, which appends must not wait for.
    /// The caller runs this off the task pool (it may block).
    func folded(_ records: [AuditRecord], file: Int) {
        _ = ftruncate(descriptors[file], 0)
        state.withLock { state in
            state.folded += records.count
            state.inFold = 0
            state.sizes[file] = 0
            let active = state.active
            guard active != file, state.pending.isEmpty, state.sizes[active] > 0 else { return }
            _ = ftruncate(descriptors[active], 0)
            state.sizes[active] = 0
        }
    }

    /// The records taken could not be folded: they wait again, ahead of newer ones (their file is kept).
    func restore(_ records: [AuditRecord]) {
        state.withLock { state in
            state.pending = records + state.pending
            state.inFold = 0
            state.scheduled = false
        }
    }

    /// Writes every byte (one `write` for a record, in practice); the error names `errno`'s meaning.
    private static func appendAll(_ bytes: [UInt8], to descriptor: Int32, path: String) throws(SystemError) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { buffer in
                buffer.baseAddress.map { Foundation.write(descriptor, $0 + offset, buffer.count - offset) } ?? 0
            }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { throw SystemError("write", path: path, errno: written < 0 ? errno : ENOSPC) }
            offset += written
        }
    }
}
