import ArgumentParser

/// Misspellings, reported before anything else a command line lacks: an unknown subcommand (`pakage`) or option
/// (`--formt`) is named, with the nearest valid name, instead of a "missing --format" that hides the mistake.
enum ArgumentCheck {
    /// The message for the first unknown subcommand or option of `arguments` (without the program name), or nil.
    static func problem(in arguments: [String]) -> String? {
        var command: ParsableCommand.Type = SatchelCommand.self
        var path = ["satchel"]
        var index = 0
        while index < arguments.count, !arguments[index].hasPrefix("-") {
            let configuration = Self.configuration(of: command)
            let subcommands = configuration.subcommands
            guard !subcommands.isEmpty else { break }
            let word = arguments[index]
            let names = subcommands.map { Self.configuration(of: $0).commandName ?? "" }
            guard let position = names.firstIndex(of: word) else {
                guard configuration.defaultSubcommand == nil else { break }
                return "unknown command '\(word)' for '\(path.joined(separator: " "))'"
                    + (nearest(word, in: names).map { "; did you mean '\($0)'?" } ?? "; the commands are \(names.joined(separator: ", "))")
            }
            command = subcommands[position]
            path.append(word)
            index += 1
        }
        let (known, takesValue) = options(of: command)
        guard !known.isEmpty else { return nil }
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" { break }
            guard argument.hasPrefix("--") else { continue }
            let name = String(argument.split(separator: "=", maxSplits: 1).first ?? Substring(argument))
            guard known.contains(name) else {
                return "unknown option '\(name)' for '\(path.joined(separator: " "))'" + (nearest(name, in: Array(known)).map { "; did you mean '\($0)'?" } ?? "")
            }
            if takesValue.contains(name), !argument.contains("=") { index += 1 }  // its value, whatever it looks like
        }
        return nil
    }

    /// The long option names `command`'s help lists (hidden ones too), and those that take a value.
    static func options(of command: ParsableCommand.Type) -> (Set<String>, Set<String>) {
        let help = SatchelCommand.helpMessage(for: command, includeHidden: true, columns: 100_000)
        var known: Set<String> = ["--help", "--version", "--experimental-dump-help", "--generate-completion-script"]
        var takesValue: Set<String> = []
        let characters = Array(help)
        var index = 0
        while index + 2 < characters.count {
            guard characters[index] == "-", characters[index + 1] == "-", index == 0 || !(characters[index - 1].isLetter || characters[index - 1] == "-") else {
                index += 1
                continue
            }
            var end = index + 2
            while end < characters.count, characters[end].isLetter || characters[end].isNumber || characters[end] == "-" { end += 1 }
            let name = String(characters[index..<end])
            if name.count > 2 {
                known.insert(name)
                if end + 1 < characters.count, characters[end] == " ", characters[end + 1] == "<" { takesValue.insert(name) }
            }
            index = end
        }
        return (known, takesValue)
    }

    /// A command's configuration.
    static func configuration(of command: ParsableCommand.Type) -> CommandConfiguration {
        command.configuration
    }

    /// The name of `names` nearest to `word` (edit distance), when near enough to be a misspelling.
    static func nearest(_ word: String, in names: [String]) -> String? {
        let scored = names.map { ($0, distance(word.lowercased(), $0.lowercased())) }.min { $0.1 < $1.1 }
        guard let (name, score) = scored, score <= max(2, word.count / 3) else { return nil }
        return name
    }

    /// Levenshtein distance.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
