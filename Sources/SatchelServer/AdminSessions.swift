import Crypto
import Foundation
import SatchelBytes

/// The operator's sessions of the dashboard (`/admin`). Logging in takes the operator key of the configuration
/// (`serve --operator-key-file`); a session is a random 32-byte ID held in an `HttpOnly`, `SameSite=Strict`
/// cookie, with its own random CSRF token that every form carries. Sessions live in memory (a restart logs
/// everyone out), end after `lifetime` or at logout, and at most `capacity` are kept (the oldest goes first).
package actor AdminSessions {
    /// One signed-in operator.
    package struct Session: Sendable {
        /// The cookie's value.
        package let id: String
        /// The token every form of this session carries.
        package let csrf: String
        /// When it ends.
        package let expires: Date
    }

    private let keyDigest: [UInt8]
    private let lifetime: TimeInterval
    private let capacity: Int
    private let now: @Sendable () -> Date
    private var sessions: [String: Session] = [:]
    private var throttle = LoginThrottle()

    /// What a login attempt came to.
    package enum LoginOutcome: Sendable {
        /// Signed in.
        case signedIn(Session)
        /// Not the operator key.
        case wrongKey
        /// Too many failed logins from this address, or with this wrong key: not even checked; try again after
        /// this many seconds.
        case throttled(retryAfter: Int)
    }

    /// Sessions for the operator key `key` (at least 16 bytes).
    package init(operatorKey key: SecretBytes, lifetime: TimeInterval = 8 * 3600, capacity: Int = 1000,
                now: @escaping @Sendable () -> Date = { Date() }) throws(AdminError) {
        guard key.bytes.count >= 16 else { throw .weakOperatorKey }
        keyDigest = Array(SHA256.hash(data: key.bytes))
        self.lifetime = lifetime
        self.capacity = max(capacity, 1)
        self.now = now
    }

    /// The operator key in a file (its text, surrounding white space trimmed).
    package static func operatorKey(file path: String) throws(AdminError) -> SecretBytes {
        guard let data = FileManager.default.contents(atPath: path) else { throw .unreadableOperatorKey(path) }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return SecretBytes(Array(text.utf8))
    }

    /// A login from `address`: a new session when `key` is the operator key (compared in constant time, through
    /// digests of equal length), unless the budget of failed logins is spent (``LoginThrottle``).
    package func logIn(key: String, from address: String) -> LoginOutcome {
        let current = now(), digest = Array(SHA256.hash(data: Array(key.utf8)))
        if let wait = throttle.retryAfter(address, credential: digest, at: current) { return .throttled(retryAfter: wait) }
        guard let session = logIn(key: key) else {
            throttle.failed(address, credential: digest, at: current)
            return .wrongKey
        }
        return .signedIn(session)
    }

    /// Whether `key`, an operator API request's bearer token from `address`, is the operator key: under the same budget
    /// of failures as sign-ins (a refused key counts against it); nil when it is the key, else the refusal.
    package func refusal(ofKey key: String, from address: String) -> AdminError? {
        let current = now(), digest = Array(SHA256.hash(data: Array(key.utf8)))
        if let wait = throttle.retryAfter(address, credential: digest, at: current) { return .tooManyLogins(retryAfter: wait) }
        guard ConstantTime.equals(digest, keyDigest) else {
            throttle.failed(address, credential: digest, at: current)
            return .wrongOperatorKey
        }
        return nil
    }

    /// A new session when `key` is the operator key (no budget: for callers that hold the key already).
    package func logIn(key: String) -> Session? {
        guard ConstantTime.equals(Array(SHA256.hash(data: Array(key.utf8))), keyDigest) else { return nil }
        let current = now()
        sessions = sessions.filter { $0.value.expires > current }
        while sessions.count >= capacity, let oldest = sessions.min(by: { $0.value.expires < $1.value.expires }) {
            sessions[oldest.key] = nil
        }
        let session = Session(id: Base64URL.encode(SecureRandom.bytes(32)), csrf: Base64URL.encode(SecureRandom.bytes(32)),
                              expires: current.addingTimeInterval(lifetime))
        sessions[session.id] = session
        return session
    }

    /// The live session with this cookie value, if any.
    package func session(_ id: String) -> Session? {
        guard let session = sessions[id] else { return nil }
        guard session.expires > now() else {
            sessions[id] = nil
            return nil
        }
        return session
    }

    /// Ends a session.
    package func logOut(_ id: String) {
        sessions[id] = nil
    }
}

/// Why the dashboard refused a request or could not start.
package enum AdminError: ProblemConvertible, Equatable {
    /// The operator key is shorter than 16 bytes.
    case weakOperatorKey
    /// The operator key file cannot be read.
    case unreadableOperatorKey(String)
    /// No session: the request needs the operator's cookie.
    case notSignedIn
    /// A form without this session's CSRF token.
    case badCSRF
    /// A login with a key that is not the operator key.
    case wrongOperatorKey
    /// Too many failed logins: wait this many seconds.
    case tooManyLogins(retryAfter: Int)

    package var code: String {
        switch self {
        case .weakOperatorKey, .unreadableOperatorKey: return "configuration"
        case .notSignedIn: return "not-signed-in"
        case .wrongOperatorKey: return "wrong-operator-key"
        case .badCSRF: return "bad-csrf-token"
        case .tooManyLogins: return "too-many-logins"
        }
    }

    package var httpStatus: Int {
        switch self {
        case .weakOperatorKey, .unreadableOperatorKey: return 500
        case .notSignedIn, .wrongOperatorKey: return 401
        case .badCSRF: return 403
        case .tooManyLogins: return 429
        }
    }

    package var description: String {
        switch self {
        case .weakOperatorKey: return "the operator key must be at least 16 bytes (satchel demo writes a 43-character one)"
        case let .unreadableOperatorKey(path): return "cannot read the operator key file \(path)"
        case .notSignedIn: return "sign in to the dashboard first (/admin/login)"
        case .wrongOperatorKey: return "that is not the operator key"
        case .badCSRF: return "the form's CSRF token is not this session's: reload the page and try again"
        case let .tooManyLogins(seconds): return "too many failed sign-ins: try again in \(seconds) s"
        }
    }
}
