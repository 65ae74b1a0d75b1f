import AsyncHTTPClient
import Foundation

extension DownloadFailure {
    /// What an HTTP request's error means for the download: a cancellation, a refused connection said plainly (naming
    /// the host and port), or another network failure (retryable).
    init(_ error: any Error, url: String) {
        if let failure = error as? DownloadFailure {
            self = failure
        } else if error is CancellationError || Task.isCancelled {
            self = .cancelled
        } else if let client = error as? HTTPClientError, client == .cancelled {
            self = .cancelled
        } else if String(describing: error).contains("Connection refused") {
            let target = URL(string: url).map { "\($0.host ?? "")\($0.port.map { ":\($0)" } ?? "")" } ?? ""
            self = .network(url: url, message: "connection refused: nothing is listening at \(target)")
        } else {
            self = .network(url: url, message: String(describing: error))
        }
    }
}
