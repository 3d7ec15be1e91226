import CCSync
import CCSyncProcesses

/// A parsed command line: the options given, with their values already checked and converted
/// to their kind, the operands and the command after `--`.
struct ParsedArguments {
  /// The command these arguments are for.
  let spec: CommandSpec
  private var flags: Set<String> = []
  private var values: [String: ParsedValue] = [:]
  var operands: [String] = []
  /// The command after `--` (only for commands that take one); `nil` when none was given.
  var command: [String]? = nil

  /// One option's value, converted to its kind.
  enum ParsedValue {
    case text(String)
    case seconds(Duration, text: String)
    case integer(Int)
    case number(Double)
    case signal(Signal)
  }

  init(spec: CommandSpec) {
    self.spec = spec
  }

  /// Whether `option` was given (a flag, or an option with a value).
  func has(_ option: OptionSpec) -> Bool {
    checkDeclared(option)
    return flags.contains(option.long) || values[option.long] != nil
  }

  /// The text of `option`'s value (for `.text`, `.file` and `.choice` options).
  func text(_ option: OptionSpec) -> String? {
    checkDeclared(option)
    switch values[option.long] {
    case .text(let text)?: return text
    case .seconds(_, let text)?: return text
    case .integer(let number)?: return String(number)
    case .number(let number)?: return String(number)
    case .signal(let signal)?: return signal.name
    case nil: return nil
    }
  }

  /// The value of a `.seconds` option.
  func seconds(_ option: OptionSpec) -> Duration? {
    checkDeclared(option)
    guard case .seconds(let duration, _)? = values[option.long] else { return nil }
    return duration
  }

  /// The value of an `.integer` option.
  func integer(_ option: OptionSpec) -> Int? {
    checkDeclared(option)
    guard case .integer(let number)? = values[option.long] else { return nil }
    return number
  }

  /// The value of a `.number` option.
  func number(_ option: OptionSpec) -> Double? {
    checkDeclared(option)
    guard case .number(let number)? = values[option.long] else { return nil }
    return number
  }

  /// The value of a `.signal` option.
  func signal(_ option: OptionSpec) -> Signal? {
    checkDeclared(option)
    guard case .signal(let signal)? = values[option.long] else { return nil }
    return signal
  }

  /// Whether the command declares `option` (for code shared by commands, such as the gate's
  /// options, that some of them take).
  func declares(_ option: OptionSpec) -> Bool {
    spec.options.contains(option)
  }

  /// The options given, in the order of the command's declarations.
  var givenOptions: [OptionSpec] {
    spec.options.filter { flags.contains($0.long) || values[$0.long] != nil }
  }

  mutating func setFlag(_ option: OptionSpec) { flags.insert(option.long) }
  mutating func setValue(_ value: ParsedValue, for option: OptionSpec) { values[option.long] = value }

  /// A command asking for an option it does not declare is a programming error: its help,
  /// completions and man page would not show it.
  private func checkDeclared(_ option: OptionSpec) {
    precondition(spec.options.contains(option), "'\(spec.fullName)' reads '--\(option.long)', which it does not declare")
  }
}

extension ParsedArguments {
  /// The operand at `index` read as a PATH, or the root when it is absent.
  /// - Throws: ``UsageError`` naming the malformed path (exit 64).
  func path(at index: Int) throws(UsageError) -> JSONPath {
    guard index < operands.count else { return .root }
    return try parsePath(operands[index], in: spec)
  }

  /// A usage error of this command.
  func usageError(_ message: String) -> UsageError {
    UsageError(message: message, command: spec)
  }
}

/// A mistake on the command line: exits 64 with a message naming the offending token.
struct UsageError: Error {
  var message: String
  var command: CommandSpec
}

/// `text` read as a PATH (dotted or JSON Pointer).
/// - Throws: ``UsageError`` naming the malformed path (exit 64).
func parsePath(_ text: String, in spec: CommandSpec) throws(UsageError) -> JSONPath {
  do {
    return try JSONPath(parsing: text)
  } catch {
    var message = "\(error)"
    if case .malformed(let path, let position, let reason) = error {
      message = "Malformed path '\(path)': \(reason) at position \(position)"
    }
    throw UsageError(message: message, command: spec)
  }
}

/// A duration from a number of seconds a user typed, to the nanosecond, saturating for
/// absurd values instead of trapping.
func duration(seconds: Double) -> Duration {
  if seconds >= 1e9 { return .seconds(1_000_000_000) }
  let nanoseconds = Int64((seconds * 1e9).rounded())
  return .nanoseconds(nanoseconds)
}

/// `duration` in seconds, for printing only: time is otherwise kept as a `Duration`.
func seconds(_ duration: Duration) -> Double {
  Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}
