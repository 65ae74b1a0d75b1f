import SatchelBytes

/// A command-line failure with a one-line message a user can act on.
struct CLIError: ProblemConvertible {
    let description: String
    init(_ description: String) { self.description = description }

    /// Every command-line failure shares one code: the message says what to do.
    var code: String { "cli" }
}
