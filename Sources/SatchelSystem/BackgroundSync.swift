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
        slots.wait()
        group.enter()
        queue.async { [self] in
            defer {
                close(fd)
                slots.signal()
                group.leave()
            }
            do throws(SystemError) { try AtomicFile.sync(fd, path: path) } catch {
                failure.withLock { $0 = $0 ?? error }
            }
        }
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
