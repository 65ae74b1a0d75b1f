import SatchelBytes
import SatchelMedia
import SatchelProtection

/// Why packaging failed; names the input file where one is at fault. Never carries key material.
public enum PackagerError: ProblemConvertible {
    /// `packager-input`, `packager-options`, `packager-output` or `invalid-cpix`.
    public var code: String {
        switch self {
        case .input: return "packager-input"
        case .invalidOptions: return "packager-options"
        case .output: return "packager-output"
        case .cpix: return "invalid-cpix"
        }
    }

    /// An input file cannot be read or parsed.
    case input(file: String, reason: String)
    /// The options do not make sense together.
    case invalidOptions(String)
    /// Writing the output failed.
    case output(String)
    /// A CPIX document cannot be read or opened (malformed, changed, or for another recipient).
    case cpix(String)

    public var description: String {
        switch self {
        case let .input(file, reason): return "\(file): \(reason)"
        case let .invalidOptions(reason): return reason
        case let .output(reason): return "cannot write the package: \(reason)"
        case let .cpix(reason): return "CPIX document: \(reason)"
        }
    }
}
