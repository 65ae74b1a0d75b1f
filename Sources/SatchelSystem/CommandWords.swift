import Foundation
import SatchelBytes

/// A command line written as one string (`--exec 'ffplay -autoexit {url}'`) split into its arguments once, the
/// way a shell splits words — blanks separate, `'…'` is literal, `"…"` keeps blanks and takes `\"` and `\\`, a
/// backslash outside quotes takes the next character — and nothing more: no variables, globs, pipes or `;`.
/// Placeholders are then replaced inside each argument, so whatever a placeholder's value holds (quotes,
/// blanks, `;`) stays inside the one argument it was put in.
package struct CommandWords: Sendable, Equatable {
    /// The arguments, the program first.
    package let words: [String]

    /// Why a command line cannot be split.
    package struct Malformed: ProblemConvertible, Equatable {
        package let description: String
        package var code: String { "malformed-command" }
        package var httpStatus: Int { 400 }
    }

    /// Splits `line`; an empty line or an unterminated quote is refused.
    package init(_ line: String) throws(Malformed) {
        var words: [String] = []
        var word = ""
        var inWord = false
        var quote: Character?
        var escaped = false
        for character in line {
            if escaped {
                // Inside double quotes a backslash escapes only what the quotes would otherwise end or expand.
                if quote == "\"", !"\"\\$`".contains(character) { word.append("\\") }
                word.append(character)
                escaped = false
                continue
            }
            switch (quote, character) {
            case ("'", "'"), ("\"", "\""):
                quote = nil
            case ("'", _):
                word.append(character)
            case ("\"", "\\"), (nil, "\\"):
                escaped = true
                inWord = true
            case ("\"", _):
                word.append(character)
            case (nil, "'"), (nil, "\""):
                quote = character
                inWord = true
            case (nil, _) where character.isWhitespace:
                if inWord { words.append(word) }
                word = ""
                inWord = false
            default:
                word.append(character)
                inWord = true
            }
        }
        if quote != nil { throw Malformed(description: "a quote is not closed") }
        if escaped { throw Malformed(description: "it ends with a backslash") }
        if inWord { words.append(word) }
        guard !words.isEmpty else { throw Malformed(description: "it names no program") }
        self.words = words
    }

    /// The arguments with every `placeholder` replaced by `value` (within the argument that holds it).
    package func replacing(_ placeholder: String, with value: String) -> [String] {
        words.map { $0.replacingOccurrences(of: placeholder, with: value) }
    }
}
