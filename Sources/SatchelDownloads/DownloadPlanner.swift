import Foundation
import SatchelStreams
import SatchelSystem

extension DownloadPlanner {
    /// The plan for a probed URL, fetching the documents the planner asks for with `fetchText` (the engine's HTTP;
    /// anything in tests). Throws the planner's `StreamError` or what `fetchText` throws.
    public static func plan(probe: Probe, options: PlanOptions, fetchText: @Sendable (URL) async throws -> String) async throws -> DownloadPlan {
        var documents: [URL: String] = [:]
        for _ in 0..<maximumRounds {
            // A manifest may hold a quarter of a million lines: parsed on a thread of its own, not the engine's.
            let known = documents
            switch try await OwnThread.run({ try step(probe: probe, options: options, documents: known) }) {
            case let .plan(plan):
                return plan
            case let .fetch(urls):
                for url in urls { documents[url] = try await fetchText(url) }
            }
        }
        throw StreamError.malformedManifest("\(probe.url.lastPathComponent) needs more documents than a manifest can")
    }
}

extension DownloadError {
    /// The engine's error for a planner's.
    public init(_ error: StreamError) {
        switch error {
        case let .liveStream(url): self = .liveStream(url)
        case let .unknownFormat(url): self = .unknownFormat(url)
        case let .malformedManifest(reason): self = .malformedManifest(reason)
        case let .nothingSelected(reason): self = .nothingSelected(reason)
        case let .mimeNotPermitted(url, type): self = .mimeNotPermitted(url: url, mimeType: type)
        case let .unsafePath(url, reason): self = .unsafeResource(.invalidContent(url: url, reason: reason))
        case let .invalidArgument(reason): self = .invalidArgument(reason)
        case let .invalidContent(reason): self = .malformedManifest(reason)
        }
    }
}
