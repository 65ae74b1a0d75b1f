import Foundation

/// The rights a license grants, one model for the server (an asset's policy narrowed by a token) and the
/// device (what a stored license allows now). Dates are absolute, in the license server's time.
public struct Rights: Codable, Sendable, Equatable {
    /// Playback is not allowed before this date (a license may be acquired earlier: it is then `inFuture`).
    public var start: Date?
    /// Playback is not allowed from this date on.
    public var end: Date?
    /// Validity after acquisition (a rental), in seconds: the license ends this long after it was issued
    /// or last renewed.
    public var validitySeconds: UInt32?
    /// The playback window, in seconds: once playback has started for the first time, the license ends
    /// this long after.
    public var playbackSeconds: UInt32?
    /// The license may be kept for offline playback.
    public var persistent: Bool
    /// How often the device should renew the license, in seconds (nil: it is not renewable).
    public var renewalSeconds: UInt32?
    /// What the device may output.
    public var output: OutputControls

    /// Creates rights; by default: no dates, no durations, not persistent, not renewable, default output.
    public init(start: Date? = nil, end: Date? = nil, validitySeconds: UInt32? = nil, playbackSeconds: UInt32? = nil,
                persistent: Bool = false, renewalSeconds: UInt32? = nil, output: OutputControls = OutputControls()) {
        self.start = start
        self.end = end
        self.validitySeconds = validitySeconds
        self.playbackSeconds = playbackSeconds
        self.persistent = persistent
        self.renewalSeconds = renewalSeconds
        self.output = output
    }

    /// True when any right depends on the date (a start or end, a rental, a playback window): such rights
    /// cannot be honoured while the device's clock is not trusted. Rights without any stay valid.
    public var isDateBased: Bool { start != nil || end != nil || validitySeconds != nil || playbackSeconds != nil }

    /// The rights narrowed to another set: the later start, the earlier end, the shorter durations,
    /// persistence only if both allow it, the stricter output. Narrowing never widens a right.
    public func narrowed(to other: Rights) -> Rights {
        Rights(start: Self.latest(start, other.start), end: Self.earliest(end, other.end),
               validitySeconds: Self.least(validitySeconds, other.validitySeconds),
               playbackSeconds: Self.least(playbackSeconds, other.playbackSeconds),
               persistent: persistent && other.persistent, renewalSeconds: Self.least(renewalSeconds, other.renewalSeconds),
               output: output.narrowed(to: other.output))
    }

    static func earliest(_ a: Date?, _ b: Date?) -> Date? { [a, b].compactMap { $0 }.min() }
    static func latest(_ a: Date?, _ b: Date?) -> Date? { [a, b].compactMap { $0 }.max() }
    static func least(_ a: UInt32?, _ b: UInt32?) -> UInt32? { [a, b].compactMap { $0 }.min() }
}

/// Output protection the device must apply (FairPlay's HDCP and AirPlay TLLVs; Widevine's output controls).
public struct OutputControls: Codable, Sendable, Equatable {
    /// The HDCP level required on external outputs.
    public var hdcp: HDCPLevel
    /// AirPlay allowed.
    public var airPlay: Bool
    /// Wired external displays (AV adapters, HDMI) allowed.
    public var externalDisplay: Bool
    /// Analog outputs allowed.
    public var analog: Bool

    /// Creates output controls; by default no HDCP requirement and every output allowed.
    public init(hdcp: HDCPLevel = .none, airPlay: Bool = true, externalDisplay: Bool = true, analog: Bool = true) {
        self.hdcp = hdcp
        self.airPlay = airPlay
        self.externalDisplay = externalDisplay
        self.analog = analog
    }

    /// The stricter of two: the higher HDCP level, an output allowed only if both allow it.
    public func narrowed(to other: OutputControls) -> OutputControls {
        OutputControls(hdcp: max(hdcp, other.hdcp), airPlay: airPlay && other.airPlay,
                       externalDisplay: externalDisplay && other.externalDisplay, analog: analog && other.analog)
    }
}

/// What the output a session plays to can honour: the HDCP it has, and what kind of output it is.
public struct OutputCapabilities: Codable, Sendable, Equatable {
    /// The output's kind.
    public enum Kind: String, Codable, Sendable, CaseIterable {
        /// The device's own screen.
        case `internal`
        /// AirPlay.
        case airPlay = "airplay"
        /// A wired external display (AV adapter, HDMI).
        case external
        /// An analog output.
        case analog
    }

    /// The HDCP the output has.
    public var hdcp: HDCPLevel
    /// What kind of output it is.
    public var kind: Kind

    /// An output: by default the device's own screen, with no HDCP.
    public init(hdcp: HDCPLevel = .none, kind: Kind = .internal) {
        self.hdcp = hdcp
        self.kind = kind
    }
}

extension OutputControls {
    /// Why a license with these controls may not play to `output` (nil: it may): a kind of output the license does
    /// not allow, or an external output whose HDCP is below the license's (the device's own screen needs none).
    public func refusal(for output: OutputCapabilities) -> String? {
        switch output.kind {
        case .airPlay where !airPlay: return "the license does not allow AirPlay"
        case .external where !externalDisplay: return "the license does not allow external displays"
        case .analog where !analog: return "the license does not allow analog outputs"
        default: break
        }
        if output.kind != .internal, output.hdcp < hdcp {
            return "the license requires HDCP \(hdcp.rawValue); the output has \(output.hdcp.rawValue)"
        }
        return nil
    }
}

/// The HDCP level required, ordered from none to type 1.
public enum HDCPLevel: String, Codable, Sendable, Comparable, CaseIterable {
    /// No requirement.
    case none
    /// HDCP type 0 (any version).
    case type0
    /// HDCP type 1 (2.2 or later).
    case type1

    var rank: Int { Self.allCases.firstIndex(of: self) ?? 0 }

    public static func < (lhs: HDCPLevel, rhs: HDCPLevel) -> Bool { lhs.rank < rhs.rank }
}
