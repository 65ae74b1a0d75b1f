import Foundation
import SatchelStreams
import SatchelSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A directory inside an asset's folder, opened component by component from the asset folder with
/// `O_NOFOLLOW`, so a symbolic link planted anywhere in the chain is refused rather than followed.
/// Every file of an asset is reached through one of these (`openat`, `fstatat`, `renameat` relative to
/// `fd`), so nothing outside the asset's folder is ever read, counted, written or deleted.
package final class AssetFolder: @unchecked Sendable {
    /// The open directory.
    let fd: Int32
    /// Its path, for messages.
    let path: String

    private init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { close(fd) }

    /// The directory `components` below `root/asset` (each component already checked by
    /// ``LocalPath/isConfined(_:)``). With `create`, missing directories are made; without it, a missing
    /// one answers nil. A symbolic link or a file where a directory should be is `invalidContent`.
    static func open(root: String, asset: String, components: ArraySlice<Substring>, create: Bool,
                     url: String) throws(DownloadFailure) -> AssetFolder? {
        var fd = systemOpen(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd < 0, errno == ENOENT, create {
            do { try PrivateFiles.folder(root) } catch {
                throw .fileSystem(path: root, message: "cannot create the directory")
            }
            fd = systemOpen(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        }
        guard fd >= 0 else {
            if errno == ENOENT, !create { return nil }
            throw AssetStore.failure(path: root)
        }
        var path = root
        for component in [Substring(asset)] + components {
            path += "/" + component
            if create, mkdirat(fd, String(component), PrivateFiles.folderMode) != 0, errno != EEXIST {
                let failure = AssetStore.failure(path: path)
                close(fd)
                throw failure
            }
            let next = openat(fd, String(component), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            let code = errno
            close(fd)
            guard next >= 0 else {
                if code == ENOENT, !create { return nil }
                if code == ELOOP || code == ENOTDIR {
                    throw .invalidContent(url: url, reason: "a symbolic link or a file stands where the folder \(path) should be")
                }
                errno = code
                throw AssetStore.failure(path: path)
            }
            fd = next
        }
        return AssetFolder(fd: fd, path: path)
    }

    /// The size of the regular file `name` in this directory (not following a link), nil when there is none.
    func size(_ name: String) -> Int64? {
        var info = stat()
        guard fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int64(info.st_size)
    }

    /// Opens `name` in this directory without following a link; -1 with `errno` set on failure.
    func openFile(_ name: String, _ flags: Int32, mode: mode_t = PrivateFiles.fileMode) -> Int32 {
        openat(fd, name, flags | O_NOFOLLOW | O_CLOEXEC, mode)
    }

    /// Renames `from` to `to`, both in this directory.
    func rename(_ from: String, to: String) throws(DownloadFailure) {
        guard renameat(fd, from, fd, to) == 0 else { throw AssetStore.failure(path: path + "/" + to) }
    }

    /// Removes the file `name` from this directory (a link is removed, never its target).
    func unlink(_ name: String) {
        _ = unlinkat(fd, name, 0)
    }

    /// Writes `bytes` as `name` with the one crash-safe writer (temporary file, fsync, rename, fsync of the folder).
    func writeAtomically(_ name: String, _ bytes: [UInt8], mode: mode_t = PrivateFiles.fileMode) throws(DownloadFailure) {
        do throws(SystemError) {
            try AtomicFile.write(bytes, name: name, in: fd, directoryPath: path, mode: mode)
        } catch {
            throw AssetStore.failure(error)
        }
        AtomicFile.removeLeftovers(of: name, in: fd)  // a write killed before its rename left its temporary file
    }

    /// The whole content of the regular file `name` (at most 256 MiB), read without following a link.
    func readAll(_ name: String) throws(DownloadFailure) -> [UInt8] {
        let file = openFile(name, O_RDONLY)
        guard file >= 0 else { throw AssetStore.failure(path: path + "/" + name) }
        defer { close(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(file, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw AssetStore.failure(path: path + "/" + name) }
            if count == 0 { return bytes }
            bytes += chunk[..<count]
            guard bytes.count <= 256 << 20 else { throw .fileSystem(path: path + "/" + name, message: "larger than 256 MiB") }
        }
    }

    /// Writes every byte of `bytes` to `fd`, retrying on EINTR.
    static func writeAll<Bytes: Collection<UInt8>>(_ fd: Int32, _ bytes: Bytes, path: String) throws(DownloadFailure) {
        do throws(SystemError) {
            try AtomicFile.writeAll(fd, bytes, path: path)
        } catch {
            throw AssetStore.failure(error)
        }
    }

    /// Makes what was written to the open file `file` durable (before it is renamed complete).
    static func sync(_ file: Int32, path: String) throws(DownloadFailure) {
        do throws(SystemError) {
            try AtomicFile.sync(file, path: path)
        } catch {
            throw AssetStore.failure(error)
        }
    }
}

#if canImport(Glibc)
private func systemOpen(_ path: String, _ flags: Int32) -> Int32 { Glibc.open(path, flags) }
#elseif canImport(Darwin)
private func systemOpen(_ path: String, _ flags: Int32) -> Int32 { Darwin.open(path, flags) }
#endif
