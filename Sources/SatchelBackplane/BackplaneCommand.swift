import Foundation

/// A command the backplane sends one device (remote delete, remote wipe, remote kill; the toggle; pushed
/// settings). Each device's commands are numbered from 1 in the order issued, without gaps: the device applies them in
/// that order, each once, and acknowledges each (delivery is at least once).
public struct BackplaneCommand: Codable, Sendable, Equatable, Identifiable {
    /// A unique ID (acknowledgements name it).
    public var id: String
    /// Its place among the device's commands: 1, 2, 3, …
    public var sequence: Int64
    /// When it was issued.
    public var issued: Date
    /// What to do.
    public var action: Action

    /// What a command asks of the device.
    public enum Action: Sendable, Equatable {
        /// Delete one asset (its files and its license).
        case deleteAsset(String)
        /// Delete every asset and license.
        case wipe
        /// Wipe, then unregister: the device's later calls are refused.
        case kill
        /// Turn downloading on or off.
        case downloadEnabled(Bool)
        /// Take these settings.
        case settings(BackplaneSettings)

        /// The stable name of its kind.
        public var kind: String {
            switch self {
            case .deleteAsset: return "delete-asset"
            case .wipe: return "wipe"
            case .kill: return "kill"
            case .downloadEnabled: return "download-enabled"
            case .settings: return "settings"
            }
        }
    }

    /// The asset the command names (a remote delete's).
    public var asset: String? {
        if case let .deleteAsset(asset) = action { return asset }
        return nil
    }

    /// A command.
    public init(id: String, sequence: Int64, issued: Date, action: Action) {
        self.id = id
        self.sequence = sequence
        self.issued = issued
        self.action = action
    }

    private enum Keys: String, CodingKey { case id, sequence, issued, kind, asset, enabled, settings }

    /// Reads the JSON form: `{"id", "sequence", "issued", "kind", "asset"?, "enabled"?, "settings"?}`; an unknown
    /// kind, or a kind without its member, is an error.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        id = try container.decode(String.self, forKey: .id)
        sequence = try container.decode(Int64.self, forKey: .sequence)
        issued = try container.decode(Date.self, forKey: .issued)
        let kind = try container.decode(String.self, forKey: .kind)
        switch kind {
        case "delete-asset": action = .deleteAsset(try container.decode(String.self, forKey: .asset))
        case "wipe": action = .wipe
        case "kill": action = .kill
        case "download-enabled": action = .downloadEnabled(try container.decode(Bool.self, forKey: .enabled))
        case "settings": action = .settings(try container.decode(BackplaneSettings.self, forKey: .settings))
        default: throw DecodingError.dataCorruptedError(forKey: .kind, in: container, debugDescription: "unknown command kind \(kind)")
        }
        guard sequence >= 1 else { throw DecodingError.dataCorruptedError(forKey: .sequence, in: container, debugDescription: "a sequence starts at 1") }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(id, forKey: .id)
        try container.encode(sequence, forKey: .sequence)
        try container.encode(issued, forKey: .issued)
        try container.encode(action.kind, forKey: .kind)
        switch action {
        case let .deleteAsset(asset): try container.encode(asset, forKey: .asset)
        case let .downloadEnabled(enabled): try container.encode(enabled, forKey: .enabled)
        case let .settings(settings): try container.encode(settings, forKey: .settings)
        case .wipe, .kill: break
        }
    }
}

/// The device's side of "in order, each once": the number of the last command it applied. Commands arrive at least
/// once and in any batch; `due(_:)` gives those to apply now — the next numbers in order, stopping at a gap, each once.
public struct CommandLedger: Codable, Sendable, Equatable {
    /// The sequence of the last command applied (0: none yet).
    public private(set) var lastApplied: Int64

    /// A ledger whose last applied command is `lastApplied`.
    public init(lastApplied: Int64 = 0) {
        self.lastApplied = max(lastApplied, 0)
    }

    /// The commands of `received` to apply now, in order: `lastApplied + 1`, `+ 2`, … as far as they run without a
    /// gap; those applied already and repeats are left out.
    public func due(_ received: [BackplaneCommand]) -> [BackplaneCommand] {
        var bySequence: [Int64: BackplaneCommand] = [:]
        for command in received where command.sequence > lastApplied && bySequence[command.sequence] == nil {
            bySequence[command.sequence] = command
        }
        var due: [BackplaneCommand] = []
        var next = lastApplied &+ 1
        while next > lastApplied, let command = bySequence[next] {
            due.append(command)
            next &+= 1
        }
        return due
    }

    /// Takes up from `sequence` when the server says every command up to it is acknowledged (the device's record
    /// was lost or is behind); never moves back.
    public mutating func skip(through sequence: Int64) {
        lastApplied = max(lastApplied, sequence)
    }

    /// Records `command` as applied; only the next in order moves the ledger (false for any other).
    @discardableResult
    public mutating func applied(_ command: BackplaneCommand) -> Bool {
        guard command.sequence == lastApplied &+ 1, command.sequence > lastApplied else { return false }
        lastApplied = command.sequence
        return true
    }
}
