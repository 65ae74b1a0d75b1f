import SatchelProtection

/// The proxy's refusal of fMP4 it made clear that still carries protection: never handed to a player as media.
enum ClearOutput {
    /// Throws ``PlaybackError/unsupportedProtection(_:)`` when `bytes`, made clear from the file at `path`, still
    /// carry protection boxes (``ClearOutputCheck``).
    static func check(_ bytes: [UInt8], of path: String) throws(PlaybackError) {
        let left = ClearOutputCheck.protection(inFMP4: bytes)
        guard !left.isEmpty else { return }
        let name = path.split(separator: "/").last.map(String.init) ?? path
        throw .unsupportedProtection("\(name) still carries protection once made clear (\(left.joined(separator: ", "))): the proxy does not serve it as media")
    }
}
