/// How many files of an asset are fetched at once. It starts at a configured number and, while more
/// connections bring more throughput — a long round trip that leaves each connection idle between
/// requests, an origin that caps every connection's rate — grows by half again, up to a maximum. When a
/// step gains less than `gain`, it goes back one step and stays there for the attempt.
///
/// Each step is judged on a window of the bytes fetched, measured after the new connections had
/// `settle` seconds to open. A pure value: the worker feeds it the byte count and a monotonic time.
public struct AdaptiveParallelism: Sendable, Equatable {
    /// Files fetched at once now.
    public private(set) var limit: Int
    /// The most it grows to.
    public let maximum: Int
    /// True once it stopped growing.
    public private(set) var isSettled: Bool
    let window: Double
    let settle: Double
    let gain: Double
    private var previous: Step?
    private var windowStart: Sample?
    private var changedAt: Double?

    private struct Step: Sendable, Equatable {
        var limit: Int
        var rate: Double
    }

    private struct Sample: Sendable, Equatable {
        var time: Double
        var bytes: Int64
    }

    /// Starts at `initial` files at once (at least 1), growing to `maximum` (never below `initial`).
    public init(initial: Int, maximum: Int, window: Double = 1, settle: Double = 0.25, gain: Double = 1.1) {
        limit = max(initial, 1)
        self.maximum = max(maximum, limit)
        isSettled = self.maximum == limit
        self.window = max(window, 0.01)
        self.settle = max(settle, 0)
        self.gain = gain
    }

    /// Feeds the bytes fetched so far at `time` (seconds on a monotonic clock); returns the limit to use now.
    @discardableResult
    public mutating func observe(bytes: Int64, at time: Double) -> Int {
        guard !isSettled else { return limit }
        guard let since = changedAt else {
            changedAt = time
            return limit
        }
        guard let start = windowStart else {
            if time - since >= settle { windowStart = Sample(time: time, bytes: bytes) }
            return limit
        }
        let elapsed = time - start.time
        guard elapsed >= window else { return limit }
        let rate = Double(bytes - start.bytes) / elapsed
        windowStart = nil
        changedAt = time
        if let previous, rate < previous.rate * gain {
            limit = previous.limit  // the last step did not pay for its connections
            isSettled = true
        } else if limit >= maximum {
            isSettled = true
        } else {
            previous = Step(limit: limit, rate: rate)
            limit = min(maximum, limit + max(limit / 2, 1))
        }
        return limit
    }
}
