import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes new files and makes them durable on background threads while the writer goes on, for a folder
/// that takes its name only when whole (a package's staging folder): the folder's owner calls ``wait()``
/// before it syncs the folder and renames it, so nothing is named complete before its bytes are on disk,
/// and the disk's flushing overlaps the work that produces the next file instead of stalling it.
public final class BackgroundSync: @unchecked Sendable {
    private let queue = DispatchQueue(label: "satchel.background-sync", attributes: .concurrent)
    private let group = DispatchGroup()
    private let slots: DispatchSemaphore
    private let failure = Locked<SystemError?>(nil)

    /// A syncer with at most `maxPending` files waiting for their sync (each holds a descriptor).
    public init(maxPending: Int = 16) {
        slots = DispatchSemaphore(value: max(maxPending, 1))
    }

    /// Creates (or truncates) the file at `path`, writes `bytes`, and syncs it in the background. A sync that
    /// failed earlier is thrown here, so a writer stops at the first file that could not be made durable.
    public func write<Bytes: Collection<UInt8>>(_ bytes: Bytes, to path: String, mode: mode_t = 0o644) throws(SystemError) {
        if let earlier = failure.current { throw earlier }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else { throw SystemError("create", path: path, errno: errno) }
        do throws(SystemError) { try AtomicFile.writeAll(fd, bytes, path: path) } catch {
            close(fd)
            throw error
        }
        inBackground(fd) { [self] in
            do throws(SystemError) { try AtomicFile.sync(fd, path: path) } catch { record(error) }
        }
    }

    /// Creates (or truncates) the file at `path` here, then writes `header` followed by the first `count` bytes of
    /// `payload` and syncs the file on a background thread, giving `payload` back to `pool` once written: the
    /// caller goes on producing the next file while the kernel copies this one, on another core. A write or sync
    /// that failed is thrown by the next call or by ``wait()``.
    public func write(_ header: [UInt8] = [], _ payload: consuming [UInt8], count: Int, to path: String, mode: mode_t = 0o644,
                      returningTo pool: BufferPool) throws(SystemError) {
        if let earlier = failure.current {
            pool.give(payload)
            throw earlier
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else {
            let error = SystemError("create", path: path, errno: errno)
            pool.give(payload)
            throw error
        }
        let handed = HandedBytes(payload)
        inBackground(fd) { [self] in
            let written = handed.take()
            var outcome: Result<Void, SystemError> = .success(())
            do throws(SystemError) {
                try AtomicFile.writeAll(fd, header, path: path)
                try AtomicFile.writeAll(fd, written.prefix(max(0, min(count, written.count))), path: path)
            } catch {
                outcome = .failure(error)
            }
            pool.give(written)
            if case .success = outcome {
                do throws(SystemError) { try AtomicFile.sync(fd, path: path) } catch { outcome = .failure(error) }
            }
            if case .failure(let error) = outcome { record(error) }
        }
    }

    /// Runs `work` on the background queue once a slot is free, then closes `fd`.
    private func inBackground(_ fd: Int32, _ work: @escaping @Sendable () -> Void) {
        slots.wait()
        group.enter()
        queue.async { [self] in
            defer {
                close(fd)
                slots.signal()
                group.leave()
            }
            work()
        }
    }

    /// Keeps the first failure, for the next write and ``wait()`` to throw.
    private func record(_ error: SystemError) {
        failure.withLock { $0 = $0 ?? error }
    }

    /// Waits until every file written so far is durable; throws the first sync that failed.
    public func wait() throws(SystemError) {
        group.wait()
        if let failure = failure.current { throw failure }
    }

    deinit {
        group.wait()  // no descriptor outlives the syncer
    }
}

/// Bytes handed to another thread: ``take()`` leaves the box empty, so the taker holds the only reference
/// and can empty the array without copying it.
private final class HandedBytes: @unchecked Sendable {  // taken once, by the one block that received it
    private var bytes: [UInt8]

    init(_ bytes: consuming [UInt8]) {
        self.bytes = bytes
    }

    func take() -> [UInt8] {
        var taken: [UInt8] = []
        swap(&taken, &bytes)
        return taken
    }
}
