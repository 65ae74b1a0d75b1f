import SatchelProtection

/// The proxy's refusal of media it made clear that still carries protection: never handed to a player as media.
enum ClearOutput {
    /// The clear bytes a transport stream's check reads from its start: its program map comes first.
    static let transportHead = 64 << 10

    /// Throws ``PlaybackError/unsupportedProtection(_:)`` when `bytes`, made clear from the file at `path`, still
    /// carry protection boxes (``ClearOutputCheck``).
    static func check(_ bytes: [UInt8], of path: String) throws(PlaybackError) {
        try refuse(ClearOutputCheck.protection(inFMP4: bytes), path)
    }

    /// Throws ``PlaybackError/unsupportedProtection(_:)`` when the start of an MPEG-TS segment made clear from the
    /// file at `path` still declares an encrypted stream (``ClearOutputCheck``); other bytes pass.
    static func check(transportStream bytes: [UInt8], of path: String) throws(PlaybackError) {
        try refuse(ClearOutputCheck.protection(inTS: Array(bytes.prefix(transportHead))), path)
    }

    private static func refuse(_ left: [String], _ path: String) throws(PlaybackError) {
        guard !left.isEmpty else { return }
        let name = path.split(separator: "/").last.map(String.init) ?? path
        throw .unsupportedProtection("\(name) still carries protection once made clear (\(left.joined(separator: ", "))): the proxy does not serve it as media")
    }
}
