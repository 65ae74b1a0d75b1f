import NIOCore

/// Runs a task's jobs on one SwiftNIO event loop: a connection's requests are served on the loop that reads and
/// writes its socket, instead of hopping to the task pool and back for every request part. Under load, on a
/// machine with few cores, those hops made the server's rate depend on how the scheduler happened to pair loop
/// and pool threads (the license service's Clear Key rate moved between two levels, 22,000 and 31,000 a second,
/// from one run to the next).
///
/// Blocking is as forbidden here as on the pool (databases and files have threads of their own); default actors a
/// request calls run their code on the loop too, while the task prefers it.
@available(macOS 15, iOS 18, tvOS 18, *)
final class LoopTaskExecutor: TaskExecutor {
    let loop: any EventLoop

    init(loop: any EventLoop) {
        self.loop = loop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// Where a connection's requests are served.
enum ConnectionExecutor {
    /// Runs `body` with its jobs preferring `channel`'s event loop (on Apple platforms before macOS 15 and iOS 18,
    /// which have no task executors, on the task pool as before).
    static func serving(_ channel: any Channel, _ body: () async -> Void) async {
        if #available(macOS 15, iOS 18, tvOS 18, *) {
            await withTaskExecutorPreference(LoopTaskExecutor(loop: channel.eventLoop), operation: body)
        } else {
            await body()
        }
    }
}
