import CCSync
import CCSyncProcesses

/// A small hand-written command-line parser in the manner of swift-argument-parser: options
/// may come before or after operands, `--opt=value` and `--opt value`, clustered short flags
/// (`-rc`), `-w5` and `-w 5`, and `--` ends options. A token that looks like a negative number
/// (`-5`, `-1.5`) is an operand, so `ccsync set FILE delta -5` works without `--`.

/// One option of a command.
struct OptionSpec {
  /// The one-letter name without the dash, if any.
  var short: Character?
  /// The long name without the dashes; also the key the parsed value is stored under.
  var long: String
  /// The name of the value in help (`secs`), or `nil` for a flag.
  var valueName: String?
  /// One line of help.
  var help: String

  init(_ short: Character?, _ long: String, value valueName: String? = nil, help: String) {
    self.short = short
    self.long = long
    self.valueName = valueName
    self.help = help
  }

  var takesValue: Bool { valueName != nil }

  /// How the option is named in help and errors: `-w, --wait <secs>`.
  var helpLabel: String {
    var label = short.map { "-\($0), " } ?? ""
    label += "--\(long)"
    if let valueName { label += " <\(valueName)>" }
    return label
  }

  /// How the option is named in an error about its value: `--wait <secs>`.
  var errorLabel: String {
    "--\(long)" + (valueName.map { " <\($0)>" } ?? "")
  }
}

/// One operand (positional argument) of a command.
struct OperandSpec {
  var name: String
  var isOptional: Bool
  var help: String

  init(_ name: String, optional: Bool = false, help: String) {
    self.name = name
    self.isOptional = optional
    self.help = help
  }
}

/// Everything the parser and the help printer know about one command.
struct CommandSpec {
  /// `get`, or `` for the top level.
  var name: String
  var overview: String
  /// The usage line after `ccsync `, e.g. `get [--raw] [--compact] <file> [<path>]`.
  var usage: String
  var operands: [OperandSpec]
  var options: [OptionSpec]
  /// Paragraphs printed after the options.
  var discussion: String? = nil
  /// Whether the command takes a command to run after `--` (`lock`, `watch`).
  var takesCommand = false
  /// For `lock`: after this many operands, the next operand starts the command even without
  /// `--`, as flock(1) allows.
  var commandStartsAfterOperands: Int? = nil
  /// Not listed in the top-level help (`stress-worker`).
  var isHidden = false
  /// Takes more operands than it lists, in repeats of the listed ones (`mirror`'s pairs);
  /// the command checks their number.
  var repeatsOperands = false

  /// The command's name as typed: `ccsync get`.
  var fullName: String { name.isEmpty ? "ccsync" : "ccsync \(name)" }
}

/// A parsed command line.
struct ParsedArguments {
  private(set) var flags: Set<String> = []
  private(set) var values: [String: String] = [:]
  var operands: [String] = []
  /// The command after `--` (only for commands that take one); `nil` when none was given.
  var command: [String]? = nil

  /// Whether the flag with this long name was given.
  func has(_ long: String) -> Bool { flags.contains(long) || values[long] != nil }

  /// The value of the option with this long name (the last one given wins).
  func value(_ long: String) -> String? { values[long] }

  mutating func setFlag(_ long: String) { flags.insert(long) }
  mutating func setValue(_ value: String, for long: String) { values[long] = value }
}

/// A mistake on the command line: exits 64 with a message naming the offending token.
struct UsageError: Error {
  var message: String
  var command: CommandSpec
}

/// What parsing found: arguments to run with, or a request for help.
enum ParseResult {
  case run(ParsedArguments)
  case help
}

enum ArgumentParser {
  /// Parses `arguments` (without the command name) for `spec`.
  /// - Throws: ``UsageError`` for an unknown option, a missing or extra operand, a missing or
  ///   unwanted option value.
  static func parse(_ arguments: [String], for spec: CommandSpec) throws(UsageError) -> ParseResult {
    // Help wins over every other mistake, as in swift-argument-parser.
    if helpRequested(arguments, for: spec) { return .help }
    var parsed = ParsedArguments()
    var index = 0
    var optionsEnded = false
    func fail(_ message: String) -> UsageError { UsageError(message: message, command: spec) }

    let requiredOperands = spec.operands.filter { !$0.isOptional }.count
    while index < arguments.count {
      let token = arguments[index]
      index += 1
      // `--` ends the options; for a command that runs a command, a `--` once its required
      // operands are given (or after an earlier `--`) starts that command instead:
      // `lock -- -file.json CMD` as with flock(1), `watch FILE -- CMD`, `watch -- -f.json a -- CMD`.
      if token == "--" && (!optionsEnded || spec.takesCommand) {
        if spec.takesCommand && (optionsEnded || parsed.operands.count >= requiredOperands) {
          parsed.command = Array(arguments[index...])
          index = arguments.count
        } else {
          optionsEnded = true
        }
        continue
      }
      if optionsEnded || !looksLikeOption(token) {
        parsed.operands.append(token)
        if let start = spec.commandStartsAfterOperands, parsed.operands.count == start + 1 {
          // `ccsync lock FILE CMD ARGS...`: the command and everything after it, verbatim.
          parsed.command = [parsed.operands.removeLast()] + arguments[index...]
          index = arguments.count
        }
        continue
      }
      if token.hasPrefix("--") {
        let body = token.dropFirst(2)
        let name: Substring
        let attached: String?
        if let equals = body.firstIndex(of: "=") {
          name = body[..<equals]
          attached = String(body[body.index(after: equals)...])
        } else {
          name = body
          attached = nil
        }
        guard let option = spec.options.first(where: { $0.long == name }) else {
          throw fail("Unknown option '--\(name)'")
        }
        if option.takesValue {
          if let attached {
            parsed.setValue(attached, for: option.long)
          } else if index < arguments.count {
            parsed.setValue(arguments[index], for: option.long)
            index += 1
          } else {
            throw fail("Missing value for '\(option.errorLabel)'")
          }
        } else {
          if attached != nil { throw fail("The option '--\(name)' does not take a value") }
          parsed.setFlag(option.long)
        }
        continue
      }
      // Short options, possibly clustered: `-rc`, `-nw5`, `-w 5`.
      var letters = Substring(token.dropFirst())
      while let letter = letters.first {
        letters = letters.dropFirst()
        guard let option = spec.options.first(where: { $0.short == letter }) else {
          throw fail("Unknown option '-\(letter)'")
        }
        if option.takesValue {
          if !letters.isEmpty {
            parsed.setValue(String(letters.hasPrefix("=") ? letters.dropFirst() : letters), for: option.long)
          } else if index < arguments.count {
            parsed.setValue(arguments[index], for: option.long)
            index += 1
          } else {
            throw fail("Missing value for '\(option.errorLabel)'")
          }
          break
        }
        parsed.setFlag(option.long)
      }
    }

    if parsed.operands.count < requiredOperands {
      throw fail("Missing expected argument '<\(spec.operands[parsed.operands.count].name)>'")
    }
    if parsed.operands.count > spec.operands.count && !spec.repeatsOperands {
      throw fail("Unexpected argument '\(parsed.operands[spec.operands.count])'")
    }
    return .run(parsed)
  }

  /// Whether `-h` or `--help` occurs among the options: before `--`, not as an option's value,
  /// not inside the command of `lock`.
  private static func helpRequested(_ arguments: [String], for spec: CommandSpec) -> Bool {
    var operands = 0
    var index = 0
    while index < arguments.count {
      let token = arguments[index]
      index += 1
      if token == "--" { return false }
      if token == "-h" || token == "--help" { return true }
      if !looksLikeOption(token) {
        operands += 1
        if let start = spec.commandStartsAfterOperands, operands > start { return false }
        continue
      }
      // Skip the value of an option that takes one as the next token.
      if token.hasPrefix("--") {
        if !token.contains("="), spec.options.first(where: { "--" + $0.long == token })?.takesValue == true { index += 1 }
      } else {
        for (offset, letter) in token.dropFirst().enumerated()
        where spec.options.first(where: { $0.short == letter })?.takesValue == true {
          if offset == token.count - 2 { index += 1 }
          break
        }
      }
    }
    return false
  }

  /// Whether `token` is meant as an option: starts with `-`, is not `-` alone and is not a
  /// negative number.
  static func looksLikeOption(_ token: String) -> Bool {
    guard token.hasPrefix("-"), token.count > 1 else { return false }
    if token == "--" { return true }
    let rest = token.dropFirst()
    if let first = rest.first, first.isASCII, first.isNumber { return false }
    if rest.hasPrefix("."), rest.dropFirst().first?.isNumber == true { return false }
    return true
  }
}

extension ParsedArguments {
  /// The value of `option`, a number of seconds (`1`, `0.25`), as a `Duration` (see
  /// ``duration(seconds:)``), or `nil` when not given.
  /// - Throws: ``UsageError`` when it is not a non-negative, finite number.
  func seconds(_ long: String, in spec: CommandSpec) throws(UsageError) -> Duration? {
    guard let text = value(long) else { return nil }
    guard let seconds = Double(text), seconds.isFinite, seconds >= 0 else {
      throw invalidValue(text, long, spec, "a number of seconds, such as 5 or 0.5")
    }
    return duration(seconds: seconds)
  }

  /// The value of `option` as an integer in `range`, or `nil` when not given.
  func integer(_ long: String, in spec: CommandSpec, range: ClosedRange<Int>) throws(UsageError) -> Int? {
    guard let text = value(long) else { return nil }
    guard let number = Int(text), range.contains(number) else {
      let expected = range.upperBound == Int.max
        ? "an integer of at least \(range.lowerBound)"
        : "an integer from \(range.lowerBound) to \(range.upperBound)"
      throw invalidValue(text, long, spec, expected)
    }
    return number
  }

  private func invalidValue(_ text: String, _ long: String, _ spec: CommandSpec, _ expected: String) -> UsageError {
    let label = spec.options.first { $0.long == long }?.errorLabel ?? "--\(long)"
    return UsageError(message: "The value '\(text)' is invalid for '\(label)': expected \(expected)", command: spec)
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

extension ParsedArguments {
  /// The operand at `index` read as a PATH, or the root when it is absent.
  /// - Throws: ``UsageError`` naming the malformed path (exit 64).
  func path(at index: Int, in spec: CommandSpec) throws(UsageError) -> JSONPath {
    guard index < operands.count else { return .root }
    return try parsePath(operands[index], in: spec)
  }
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
