import CCSync
import CCSyncProcesses

/// What every command shares in its declarations, and the help text made from them.
enum Help {
  static let version = "0.2.0"
  /// The date of this version, for the manual page.
  static let releaseDate = "2026-12-05"

  static let fileOperand = OperandSpec(
    "file", kind: .document, help: "The JSON file, or an etcd key: etcd://[HOST:PORT[,HOST:PORT...]]/KEY.")
  static let pathOperand = OperandSpec(
    "path", optional: true,
    help: "Dotted path (server.port, servers[0].host) or JSON Pointer (/server/port); the whole document when omitted.")
  static let helpOption = OptionSpec("h", "help", help: "Show help information.")
  /// What a write does on an etcd key, for the writing commands' help.
  static let etcdWriteNote = "On an etcd key (etcd://...) the write is a compare-and-swap, repeated on the newer value when another write came first; it takes no lock, so -n changes nothing, and -w <secs> is how long the write may keep trying the cluster (each call and the retries between them)."

  /// `--jsonc`: read every document as JWCC (JSON with comments and trailing commas), as a
  /// `.jsonc` or `.hujson` name does; the same as `CCSYNC_JSONC=1`.
  static let jsonc = OptionSpec(nil, "jsonc", help: "Read the document as JWCC (comments, trailing commas), as .jsonc and .hujson files are; the same as CCSYNC_JSONC=1.")
  static let nonblock = OptionSpec("n", "nonblock", help: "Fail with status 1 at once if another process holds the lock.")
  static let wait = OptionSpec("w", "wait", value: "secs", .seconds(positive: false), help: "Fail with status 1 if the lock is not free within <secs> seconds.")
  static let lockOptions = [nonblock, wait]

  /// The top level: `ccsync --help`.
  static let top = CommandSpec(
    name: "", overview: "Share a JSON config file between processes and machines: read, write, watch, lock and mirror it.",
    operands: [],
    options: [OptionSpec("V", "version", help: "Show the version.")])

  /// The help text of `spec`, in swift-argument-parser's layout.
  static func text(for spec: CommandSpec) -> String {
    var text = "OVERVIEW: \(spec.overview)\n\nUSAGE: \(spec.usage)\n"
    if !spec.operands.isEmpty {
      text += "\nARGUMENTS:\n"
      for operand in spec.operands { text += row("<\(operand.name)>", operand.help) }
      if spec.takesCommand { text += row("<command> ...", "The command to run, after '--'.") }
    }
    text += "\nOPTIONS:\n"
    for option in spec.allOptions { text += row(option.helpLabel, option.help) }
    if spec.name.isEmpty {
      text += "\nSUBCOMMANDS:\n"
      for command in CommandRegistry.visibleSpecs { text += row(command.name, command.overview) }
      text += "\n  See 'ccsync help <subcommand>' for detailed help.\n"
      return text
    }
    if let discussion = spec.discussion {
      text += "\n" + discussion + "\n"
    }
    return text
  }

  /// One two-column row: the label padded to 24 columns, or on a line of its own when longer.
  private static func row(_ label: String, _ help: String) -> String {
    let indented = "  " + label
    if indented.count < 24 {
      return indented + String(repeating: " ", count: 26 - indented.count) + help + "\n"
    }
    return indented + "\n" + String(repeating: " ", count: 26) + help + "\n"
  }

  /// Prints `error` as swift-argument-parser does, to standard error.
  static func report(_ error: UsageError) {
    let subcommand = error.command.name.isEmpty ? "ccsync --help" : "ccsync \(error.command.name) --help"
    StandardStreams.write(
      "Error: \(error.message)\nUsage: \(error.command.usage)\n  See '\(subcommand)' for more information.\n",
      toStandardError: true)
  }
}

/// `ccsync help [SUBCOMMAND]`.
enum HelpCommand: Command {
  static let spec = CommandSpec(
    name: "help", overview: "Show help for a subcommand.",
    operands: [OperandSpec("subcommand", optional: true, kind: .choice([]), help: "The subcommand.")], options: [])

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    guard let name = arguments.operands.first else {
      StandardStreams.write(Help.text(for: Help.top))
      return ExitCode.success
    }
    guard let command = CommandRegistry.command(named: name) else {
      throw arguments.usageError("Unknown subcommand '\(name)'" + Suggestion.nearest(to: name, among: CommandRegistry.visibleSpecs.map(\.name)))
    }
    StandardStreams.write(Help.text(for: command.spec))
    return ExitCode.success
  }
}

/// `ccsync version`, the same as `ccsync --version` and `-V`.
enum VersionCommand: Command {
  static let spec = CommandSpec(name: "version", overview: "Show the version.", operands: [], options: [])

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    StandardStreams.writeLine("ccsync \(Help.version)")
    return ExitCode.success
  }
}
