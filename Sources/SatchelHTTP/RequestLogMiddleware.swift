import HTTPTypes
import Hummingbird
import Logging

/// Logs one line per request: method, path (never the query string, which may carry a token; redacted as
/// the server asks), status,
/// duration and, for refusals, the problem type. Headers and bodies are never logged. Successful requests
/// log at `level`, failures one step higher, server errors at `error`.
public struct RequestLogMiddleware<Context: RequestContext>: RouterMiddleware {
    let logger: Logger
    let level: Logger.Level
    let redact: @Sendable (String) -> String

    /// A middleware writing to `logger`; `redact` rewrites a path before it is logged (a path that carries a
    /// secret, such as a playback session token, must not reach the log).
    public init(logger: Logger, level: Logger.Level = .debug, redact: @escaping @Sendable (String) -> String = { $0 }) {
        self.logger = logger
        self.level = level
        self.redact = redact
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let clock = ContinuousClock()
        let start = clock.now
        let status: Int
        let problem: String?
        let response: Response
        do {
            response = try await next(request, context)
            status = response.status.code
            problem = nil
        } catch {
            let answer = Problem(any: error)
            status = answer.status.code
            problem = answer.type
            defer { write(request, status: status, problem: problem, start: start, clock: clock) }
            throw error
        }
        write(request, status: status, problem: problem, start: start, clock: clock)
        return response
    }

    private func write(_ request: Request, status: Int, problem: String?, start: ContinuousClock.Instant, clock: ContinuousClock) {
        let level: Logger.Level = status >= 500 ? .error : status >= 400 ? Self.raise(self.level) : self.level
        guard level >= logger.logLevel else { return }  // nothing is formatted for a line that would be dropped
        let elapsed = start.duration(to: clock.now)
        var metadata: Logger.Metadata = ["method": .string(request.method.rawValue), "path": .string(redact(request.uri.path)),
                                         "status": .stringConvertible(status),
                                         "ms": .string(String(format: "%.2f", Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000))]
        if let problem { metadata["problem"] = .string(problem) }
        logger.log(level: level, "request", metadata: metadata)
    }

    static func raise(_ level: Logger.Level) -> Logger.Level {
        switch level {
        case .trace: return .debug
        case .debug: return .info
        case .info: return .notice
        default: return level
        }
    }
}
