import Logging
import NIOCore
import NIOPosix
import SatchelSystem

extension StallWatchdog {
    /// Beats for every event loop of `group` (SwiftNIO's shared group by default: the servers' and clients' loops)
    /// from a task repeated on the loop every ``beatInterval``, late past `limit`.
    package func watch(_ group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, limit: Duration) {
        for (index, loop) in group.makeIterator().enumerated() {
            let heartbeat = heartbeat("event loop #\(index + 1)", limit: limit)
            let interval = TimeAmount.nanoseconds(Int64(StallWatchdog.beatInterval.components.attoseconds / 1_000_000_000))
            loop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in heartbeat.beat() }
        }
    }
}

extension StallWatchdog {
    /// A watchdog of SwiftNIO's shared loops and the task pool that logs each stall past `limit` as a warning, with
    /// every thread's line (`satchel serve --stall-report MS`).
    package static func logging(limit: Duration, to logger: Logger) -> StallWatchdog {
        let watchdog = StallWatchdog { stall in
            var metadata: Logger.Metadata = ["threads": .array(stall.threads.map { .string($0.line) })]
            if let cause = stall.cause { metadata["cause"] = .string(cause.rawValue) }
            logger.warning("a stall: the \(stall.source) did not run for \(stall.milliseconds) ms", metadata: metadata)
        }
        watchdog.watch(limit: limit)
        watchdog.watchTaskPool(limit: limit)
        return watchdog
    }
}
