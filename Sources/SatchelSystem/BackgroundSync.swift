import CSatchelSystem
import SatchelBytes
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
    /// Write handed files, taking turns: serial queues get a thread of their own, so a write never waits for a
    /// core the caller's work (or Swift's cooperative pool) holds, and two files handed one after the other are
    /// copied into the page cache at once (the copy, not the producer, is what bounds a packager's pace).
    private let writers = [DispatchQueue(label: "satchel.background-write-1"), DispatchQueue(label: "satchel.background-write-2")]
    /// The writer the next handed file goes to.
    private let turn = Locked(0)
    /// Syncs written files in the order they were written, on another thread: a write never waits for the
    /// disk to finish the file before it.
    private let syncer = DispatchQueue(label: "satchel.background-fsync")
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
        enter()
        startWriteback(fd)
        syncInBackground(fd, path: path)
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
        enter()
        let writer = writers[turn.withLock { value in
            defer { value = (value + 1) % 2 }
            return value
        }]
        writer.async { [self] in
            let written = handed.take()
            var failed: SystemError?
            do throws(SystemError) {
                try AtomicFile.writeAll(fd, header, path: path)
                try AtomicFile.writeAll(fd, written.prefix(max(0, min(count, written.count))), path: path)
            } catch {
                failed = error
            }
            pool.give(written)
            if let failed {
                record(failed)
                finish(fd)
            } else {
                startWriteback(fd)
                syncInBackground(fd, path: path)
            }
        }
    }

    /// Writes several handed files like ``write(_:_:count:to:mode:returningTo:)``, after `prepare` has changed their
    /// bytes on the writer's thread: a package's AES-128 segments are encrypted there, a batch at a time, while the
    /// caller makes the next batch on its own core. The files are created here, in order; a `prepare` that throws
    /// fails the batch (thrown by the next call or by ``wait()``).
    public func write(_ payloads: consuming [[UInt8]], to paths: [String], mode: mode_t = 0o644, returningTo pool: BufferPool,
                      prepare: @escaping @Sendable (inout [[UInt8]]) throws -> Void) throws(SystemError) {
        var batch = payloads
        if let earlier = failure.current {
            for payload in batch { pool.give(payload) }
            throw earlier
        }
        var descriptors: [Int32] = []
        for path in paths.prefix(batch.count) {
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode)
            guard fd >= 0 else {
                let error = SystemError("create", path: path, errno: errno)
                for open in descriptors { close(open) }
                for payload in batch { pool.give(payload) }
                throw error
            }
            descriptors.append(fd)
        }
        let handed = HandedBatch(&batch)
        let opened = descriptors
        for _ in opened { enter() }
        let writer = writers[turn.withLock { value in
            defer { value = (value + 1) % 2 }
            return value
        }]
        writer.async { [self] in
            var files = handed.take()
            do { try prepare(&files) } catch {
                record(SystemError("prepare", path: paths.first ?? "", errno: EINVAL))
                for fd in opened { finish(fd) }
                for file in files { pool.give(file) }
                return
            }
            for (index, fd) in opened.enumerated() {
                var file: [UInt8] = []
                if index < files.count { swap(&file, &files[index]) }
                do throws(SystemError) {
                    try AtomicFile.writeAll(fd, file, path: paths[index])
                    startWriteback(fd)
                    syncInBackground(fd, path: paths[index])
                } catch {
                    record(error)
                    finish(fd)
                }
                pool.give(file)
            }
            for extra in files.dropFirst(opened.count) { pool.give(extra) }  // more buffers than paths: back all the same
        }
    }

    /// Takes a slot for a file in flight (waits while `maxPending` are).
    private func enter() {
        slots.wait()
        group.enter()
    }

    /// Syncs `fd` on the syncer's thread, then closes it and frees its slot.
    private func syncInBackground(_ fd: Int32, path: String) {
        syncer.async { [self] in
            do throws(SystemError) { try AtomicFile.sync(fd, path: path) } catch { record(error) }
            finish(fd)
        }
    }

    /// Closes a file in flight and frees its slot.
    private func finish(_ fd: Int32) {
        close(fd)
        slots.signal()
        group.leave()
    }

    /// Asks the kernel to start writing `fd`'s dirty pages now, without waiting for them: the disk works on
    /// this file while the next is written, and the sync that follows finds most of it done. (A hint only:
    /// the sync is what makes the file durable.)
    private func startWriteback(_ fd: Int32) {
        _ = satchel_start_writeback(fd)
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

/// Several files' bytes handed to another thread, as ``HandedBytes`` hands one.
private final class HandedBatch: @unchecked Sendable {  // taken once, by the one block that received it
    private var files: [[UInt8]]

    init(_ files: inout [[UInt8]]) {
        self.files = []
        swap(&self.files, &files)
    }

    func take() -> [[UInt8]] {
        var taken: [[UInt8]] = []
        swap(&taken, &files)
        return taken
    }
}
