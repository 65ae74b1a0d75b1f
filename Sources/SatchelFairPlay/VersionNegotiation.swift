/// The outcome of comparing the device's protocol versions with the server's
/// (guide "Protocol Version Blocks", Tables 2-8 and 2-9).
public struct VersionNegotiation: Sendable, Equatable {
    /// The version the device used, if it said.
    public var used: UInt32?
    /// The highest version both sides support, if known.
    public var bestCommon: UInt32?
    /// The device used an older version than the best common one (possible attack).
    public var isDowngrade: Bool
    /// The device supports a newer version than the server: the server should be updated.
    public var deviceSupportsNewer: Bool

    /// Negotiates; throws when there is no common version or the used one is unsupported.
    /// A downgrade is reported, or refused when `rejectDowngrade` is set.
    public static func negotiate(deviceSupported: [UInt32]?, deviceUsed: UInt32?, server: [UInt32],
                                 rejectDowngrade: Bool) throws(FairPlayError) -> VersionNegotiation {
        let serverSet = Set(server)
        var result = VersionNegotiation(used: deviceUsed, bestCommon: nil, isDowngrade: false, deviceSupportsNewer: false)
        if let supported = deviceSupported {
            let common = Set(supported).intersection(serverSet)
            guard let best = common.max() else { throw .noCommonProtocolVersion(device: supported, server: server) }
            result.bestCommon = best
            result.deviceSupportsNewer = (supported.max() ?? 0) > (server.max() ?? 0)
        }
        if let used = deviceUsed {
            guard serverSet.contains(used) else { throw .protocolVersionNotSupported(used: used, server: server) }
            if let best = result.bestCommon, used < best {
                result.isDowngrade = true
                if rejectDowngrade { throw .protocolDowngrade(used: used, best: best) }
            }
        }
        return result
    }
}
