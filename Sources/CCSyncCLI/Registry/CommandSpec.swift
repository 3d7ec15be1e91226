import CCSync
import CCSyncProcesses

/// What kind of value an option takes. The parser checks and converts the value, so a command
/// reads a `Duration` or an `Int`, never a string it must validate itself; completions offer
/// the values a kind knows.
enum OptionValueKind: Sendable {
  /// Any text.
  case text
  /// A path on this machine (completions offer files).
  case file
  /// A number of seconds, `5` or `0.25`; with `positive`, above 0.
  case seconds(positive: Bool)
  /// An integer in a range.
  case integer(ClosedRange<Int>)
  /// A decimal number in a range (a ratio from 0 to 1).
  case number(ClosedRange<Double>)
  /// One of a few words (`--prefer key|file`).
  case choice([String])
  /// A signal: a name such as `HUP` or `SIGUSR1`, or a number.
  case signal
}

/// One option of a command, declared once as a static constant of the command that takes it
/// and read back through that constant (`arguments.has(Self.raw)`), so a misspelt name does
/// not compile.
struct OptionSpec: Sendable, Equatable {
  /// The one-letter name without the dash, if any.
  var short: Character?
  /// The long name without the dashes.
  var long: String
  /// The name of the value in help (`secs`), or `nil` for a flag.
  var valueName: String?
  /// What the value must be.
  var kind: OptionValueKind
  /// One line of help.
  var help: String

  /// A flag: an option that takes no value.
  init(_ short: Character?, _ long: String, help: String) {
    self.short = short
    self.long = long
    self.valueName = nil
    self.kind = .text
    self.help = help
  }

  /// An option that takes a value named `valueName` in help, of `kind`.
  init(_ short: Character?, _ long: String, value valueName: String, _ kind: OptionValueKind = .text, help: String) {
    self.short = short
    self.long = long
    self.valueName = valueName
    self.kind = kind
    self.help = help
  }

  static func == (left: OptionSpec, right: OptionSpec) -> Bool { left.long == right.long }

  var takesValue: Bool { valueName != nil }

  /// How the option is named in help and errors: `-w, --wait <secs>`.
  var helpLabel: String {
    var label = short.map { "-\($0), " } ?? ""
    label += "--\(long)"
    if let valueName { label += " <\(valueName)>" }
    return label
  }

  /// How the option is named in an error about its value and in usage lines: `--wait <secs>`.
  var errorLabel: String {
    "--\(long)" + (valueName.map { " <\($0)>" } ?? "")
  }

  /// The words a completion offers for the value, when the kind knows them.
  var knownValues: [String]? {
    switch kind {
    case .choice(let words): return words
    case .signal: return ["HUP", "INT", "QUIT", "TERM", "USR1", "USR2"]
    default: return nil
    }
  }
}

/// One operand (positional argument) of a command.
struct OperandSpec: Sendable {
  /// What an operand names, for completions.
  enum Kind: Sendable {
    /// A file or an etcd URL.
    case document
    /// A local file.
    case file
    /// An etcd URL.
    case etcdURL
    /// Anything else (a path in the document, a value).
    case text
    /// One of a few words.
    case choice([String])
  }

  var name: String
  var isOptional: Bool
  var kind: Kind
  var help: String

  init(_ name: String, optional: Bool = false, kind: Kind = .text, help: String) {
    self.name = name
    self.isOptional = optional
    self.kind = kind
    self.help = help
  }
}

/// Everything the parser, the help printer, the completions and the man page know about one
/// command.
struct CommandSpec: Sendable {
  /// `get`, or `` for the top level.
  var name: String
  var overview: String
  var operands: [OperandSpec]
  /// The options, `-h/--help` excluded: every command takes it.
  var options: [OptionSpec]
  /// Groups of options of which at most one may be given (`--string | --json`).
  var exclusive: [[OptionSpec]] = []
  /// Paragraphs printed after the options.
  var discussion: String? = nil
  /// Whether the command takes a command to run after `--` (`lock`, `watch`).
  var takesCommand = false
  /// Whether that command must be given (`lock`).
  var requiresCommand = false
  /// For `lock`: after this many operands, the next operand starts the command even without
  /// `--`, as flock(1) allows.
  var commandStartsAfterOperands: Int? = nil
  /// Not listed in the top-level help, completions or the man page (`stress-worker`).
  var isHidden = false
  /// Takes more operands than it lists, in repeats of the listed ones (`mirror`'s pairs);
  /// the command checks their number.
  var repeatsOperands = false

  /// The command's name as typed: `ccsync get`.
  var fullName: String { name.isEmpty ? "ccsync" : "ccsync \(name)" }

  /// The options with `-h/--help`, in the order help lists them.
  var allOptions: [OptionSpec] { options + [Help.helpOption] }

  /// The usage line, made from the declarations: `ccsync set [--string | --json] ... <file> <path> <value>`.
  var usage: String {
    if name.isEmpty { return "ccsync <subcommand>" }
    var parts = [fullName]
    var grouped: Set<String> = []
    for group in exclusive {
      parts.append("[" + group.map(\.errorLabel).joined(separator: " | ") + "]")
      grouped.formUnion(group.map(\.long))
    }
    for option in options where !grouped.contains(option.long) {
      parts.append("[\(option.errorLabel)]")
    }
    for operand in operands {
      parts.append(operand.isOptional ? "[<\(operand.name)>]" : "<\(operand.name)>")
    }
    if repeatsOperands {
      parts.append("[" + operands.map { "<\($0.name)>" }.joined(separator: " ") + " ...]")
    }
    if takesCommand { parts.append(requiresCommand ? "-- <command> ..." : "[-- <command> ...]") }
    return parts.joined(separator: " ")
  }

  /// The option with this long name, `--help` included.
  func option(long: Substring) -> OptionSpec? {
    allOptions.first { $0.long == long }
  }

  /// The option with this one-letter name, `-h` included.
  func option(short: Character) -> OptionSpec? {
    allOptions.first { $0.short == short }
  }
}
