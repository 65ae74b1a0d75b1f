import Foundation
import Logging
import PostgresNIO
import SatchelBackplane

/// Carries the backplane's wakes between nodes: `LISTEN satchel_backplane` on a connection of its own, each
/// notification (sent by ``FluentBackplaneStore`` in the transaction that made the change, so it arrives only once
/// the change is committed) handed to the node's ``BackplaneWakeHub``. A lost connection is opened again with
/// back-off (1 s doubling to 30 s); on every new connection every stream is woken, so what was notified while the
/// node was not listening is read from the store.
package struct PostgresWakeListener: Sendable {
    let configuration: PostgresConnection.Configuration
    let hub: BackplaneWakeHub
    let logger: Logger

    /// A listener for the database at `url` (`postgres://user:password@host:port/database`), waking `hub`.
    package init(url: String, hub: BackplaneWakeHub, logger: Logger) throws(BackplaneError) {
        guard let parts = URLComponents(string: url), ["postgres", "postgresql"].contains(parts.scheme ?? ""), let host = parts.host,
              let user = parts.user, !host.isEmpty else {
            throw .badRequest("the database URL must be postgres://user:password@host:port/database")
        }
        let database = parts.path.hasPrefix("/") ? String(parts.path.dropFirst()) : parts.path
        configuration = PostgresConnection.Configuration(host: host, port: parts.port ?? 5432, username: user.removingPercentEncoding ?? user,
                                                         password: parts.password.map { $0.removingPercentEncoding ?? $0 },
                                                         database: database.isEmpty ? nil : database, tls: .disable)
        self.hub = hub
        self.logger = logger
    }

    /// Listens until the task is cancelled.
    package func run() async {
        var delay: Duration = .seconds(1)
        var id = 0
        while !Task.isCancelled {
            id += 1
            do {
                let connection = try await PostgresConnection.connect(configuration: configuration, id: id, logger: logger)
                defer { Task { try? await connection.close() } }
                try await connection.listen(on: BackplaneWakeHub.channel) { notifications in
                    delay = .seconds(1)
                    hub.wakeAll()  // what changed while no one listened is read again
                    for try await notification in notifications { hub.wake(payload: notification.payload) }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning("backplane: not listening for other nodes' changes (trying again in \(delay)): \(String(describing: error).prefix(200))")
            }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, .seconds(30))
        }
    }
}
