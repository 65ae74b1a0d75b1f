/// The version and build of this `satchel` (a start-up line names them, so a log says what ran).
enum BuildInfo {
    /// The version.
    static let version = "0.1.0"

    /// The build: its configuration, system and processor.
    static var build: String {
        #if DEBUG
        let configuration = "debug"
        #else
        let configuration = "release"
        #endif
        #if os(Linux)
        let system = "linux"
        #elseif os(macOS)
        let system = "macos"
        #else
        let system = "other"
        #endif
        #if arch(x86_64)
        let processor = "x86_64"
        #elseif arch(arm64)
        let processor = "arm64"
        #else
        let processor = "other"
        #endif
        return "\(configuration) build, \(system) \(processor)"
    }

    /// `satchel 0.1.0 (release build, linux x86_64)`.
    static var line: String { "satchel \(version) (\(build))" }
}
