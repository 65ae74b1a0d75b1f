import Foundation
import SatchelBytes

/// Runs one attempt at one asset under structured concurrency: the manifests and folders, then every
/// missing file, `parallelism` at a time, in one task group with a progress ticker and a stop signal as
/// its other children. When the files are done, or a failure stops them, or the signal is raised, or the
/// caller's task is cancelled, every child ends before ``attempt(_:budget:stop:tick:)`` returns.
struct DownloadWorker: Sendable {
    let fetcher: any ResourceFetching
    let store: any AssetStoring
    let parallelism: Int
    /// The most files at once ``AdaptiveParallelism`` grows to.
    let maxParallelism: Int
    let progressInterval: Duration

    /// What an attempt left: the failure that stopped it (nil: complete), warnings, and the progress reached.
    struct Result: Sendable {
        var failure: DownloadFailure?
        var warnings: [String]
        var progress: LiveProgress?
    }

    private enum Child: Sendable {
        case files(DownloadFailure?, [String])
        case stop
        case ticker
    }

    /// One attempt. `tick` is called every progress interval with the tick's number; returning false stops
    /// the attempt (the asset was paused, removed or switched off elsewhere).
    func attempt(_ asset: DownloadAsset, budget: DownloadBudget, stop: StopSignal,
                 tick: @escaping @Sendable (LiveProgress, Int) async -> Bool) async -> Result {
        do {
            try store.writeManifests(asset.id, plan: asset.plan)
            try store.makeDirectories(asset.id, plan: asset.plan)
        } catch {
            return Result(failure: error, warnings: [], progress: nil)
        }
        let scan = store.scan(asset.id, plan: asset.plan)
        let live = LiveProgress(scan: scan)
        let missing = scan.complete.indices.filter { !scan.complete[$0] }
        let interval = progressInterval
        let outcome = await withTaskGroup(of: Child.self) { group -> (DownloadFailure?, [String]) in
            group.addTask { [self] in
                let (failure, warnings) = await fetchAll(asset, missing: missing, budget: budget, progress: live)
                return .files(failure, warnings)
            }
            group.addTask {
                await stop.wait()
                return .stop
            }
            group.addTask {
                var ticks = 0
                while !Task.isCancelled {
                    do { try await Task.sleep(for: interval) } catch { return .ticker }
                    ticks += 1
                    if await !tick(live, ticks) { return .stop }
                }
                return .ticker
            }
            var result: (DownloadFailure?, [String]) = (.cancelled, [])
            while let child = await group.next() {
                switch child {
                case let .files(failure, warnings):
                    result = (failure, warnings)
                    group.cancelAll()
                case .stop:
                    group.cancelAll()  // the files child ends as cancelled
                case .ticker:
                    break
                }
            }
            return result
        }
        return Result(failure: outcome.0, warnings: outcome.1, progress: live)
    }

    /// Fetches `missing` files in plan order, `parallelism` at a time to begin with and more while more
    /// brings more throughput (``AdaptiveParallelism``). Stops at the first failure (the most serious one
    /// wins: fatal, then a rule, then any other, then cancellation).
    private func fetchAll(_ asset: DownloadAsset, missing: [Int], budget: DownloadBudget,
                          progress: LiveProgress) async -> (DownloadFailure?, [String]) {
        let (plan, fetcher, store, headers, origins) = (asset.plan, fetcher, store, asset.options.headers ?? [:], asset.options.origins ?? .any)
        var control = AdaptiveParallelism(initial: parallelism, maximum: maxParallelism)
        let clock = ContinuousClock(), started = clock.now
        return await withTaskGroup(of: Swift.Result<String?, DownloadFailure>.self) { group in
            var next = missing.startIndex
            var running = 0
            var failure: DownloadFailure?
            var warnings: [String] = []
            func rank(_ failure: DownloadFailure) -> Int {
                failure.isFatal ? 3 : failure.isRuleLimit ? 2 : failure == .cancelled ? 0 : 1
            }
            while true {
                while failure == nil, running < control.limit, next < missing.endIndex, !Task.isCancelled {
                    let index = missing[next]
                    next += 1
                    running += 1
                    group.addTask {
                        do throws(DownloadFailure) {
                            return .success(try await fetcher.fetch(plan.resources[index], index: index, assetID: asset.id, store: store,
                                                                    headers: headers, origins: origins, budget: budget, progress: progress))
                        } catch {
                            return .failure(error)
                        }
                    }
                }
                guard let result = await group.next() else { break }
                running -= 1
                control.observe(bytes: progress.bytes, at: (clock.now - started).inSeconds)
                switch result {
                case let .success(warning):
                    if let warning { warnings.append(warning) }
                case let .failure(error):
                    if failure.map({ rank(error) > rank($0) }) ?? true { failure = error }
                    group.cancelAll()
                }
            }
            if failure == nil, next < missing.endIndex || Task.isCancelled { failure = .cancelled }
            return (failure, warnings)
        }
    }
}
