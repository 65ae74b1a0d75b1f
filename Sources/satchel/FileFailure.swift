import Foundation

/// A Foundation file error in words: which file, what is wrong with it, what to do. (Foundation's own text is its
/// error domain, code and a dictionary.)
enum FileFailure {
    /// The message for `error` when it is a file error, else nil.
    static func message(_ error: any Error) -> String? {
        let error = error as NSError
        guard error.domain == NSCocoaErrorDomain || error.domain == NSPOSIXErrorDomain else { return nil }
        let path = (error.userInfo[NSFilePathErrorKey] as? String) ?? (error.userInfo[NSURLErrorKey] as? URL)?.path ?? "a file"
        let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError
        let posix = error.domain == NSPOSIXErrorDomain ? Int32(error.code) : underlying.flatMap { $0.domain == NSPOSIXErrorDomain ? Int32($0.code) : nil }
        switch (CocoaError.Code(rawValue: error.code), posix) {
        case (_, ENOENT?), (.fileReadNoSuchFile, _), (.fileNoSuchFile, _):
            return "\(path) does not exist: check the path (relative paths start from \(FileManager.default.currentDirectoryPath))"
        case (_, EACCES?), (_, EPERM?), (.fileReadNoPermission, _), (.fileWriteNoPermission, _):
            return "no permission to use \(path): choose a file or folder you may read and write, or change its permissions"
        case (_, EROFS?), (.fileWriteVolumeReadOnly, _):
            return "\(path) is on a read-only file system: choose a folder you may write to"
        case (_, ENOSPC?), (.fileWriteOutOfSpace, _):
            return "the disk holding \(path) is full: free some space and run the command again"
        case (_, ENOTDIR?):
            return "a part of \(path) is a file, not a folder: check the path"
        case (_, EISDIR?):
            return "\(path) is a folder, not a file: give the file inside it"
        default:
            return "cannot use \(path): \(underlying?.localizedDescription ?? error.localizedDescription)"
        }
    }
}
