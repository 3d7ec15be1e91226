import CCSync
import CCSyncProcesses

/// A small hand-written command-line parser in the manner of swift-argument-parser: options
/// may come before or after operands, `--opt=value` and `--opt value`, clustered short flags
/// (`-rc`), `-w5` and `-w 5`, and `--` ends options. A token that looks like a negative number
/// (`-5`, `-1.5`) is an operand, so `ccsync set FILE delta -5` works without `--`. Option
/// values are checked and converted to their declared kind here, and exclusive options are
/// refused here, so every command gets them the same way.

/// What parsing found: arguments to run with, or a request for help.
enum ParseResult {
  case run(ParsedArguments)
  case help
}

enum ArgumentParser {
  /// Parses `arguments` (without the command name) for `spec`.
  /// - Throws: ``UsageError`` for an unknown option (with the nearest known one), a missing
  ///   or extra operand, a missing, unwanted or invalid option value, options that exclude
  ///   each other.
  static func parse(_ arguments: [String], for spec: CommandSpec) throws(UsageError) -> ParseResult {
    // Help wins over every other mistake, as in swift-argument-parser.
    if helpRequested(arguments, for: spec) { return .help }
    var parsed = ParsedArguments(spec: spec)
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
        guard let option = spec.option(long: name) else {
          throw fail("Unknown option '--\(name)'" + Suggestion.nearest(to: "--\(name)", among: spec.allOptions.map { "--" + $0.long }))
        }
        if option.takesValue {
          if let attached {
            parsed.setValue(try convert(attached, for: option, in: spec), for: option)
          } else if index < arguments.count {
            parsed.setValue(try convert(arguments[index], for: option, in: spec), for: option)
            index += 1
          } else {
            throw fail("Missing value for '\(option.errorLabel)'")
          }
        } else {
          if attached != nil { throw fail("The option '--\(name)' does not take a value") }
          parsed.setFlag(option)
        }
        continue
      }
      // Short options, possibly clustered: `-rc`, `-nw5`, `-w 5`.
      var letters = Substring(token.dropFirst())
      while let letter = letters.first {
        letters = letters.dropFirst()
        guard let option = spec.option(short: letter) else {
          throw fail("Unknown option '-\(letter)'")
        }
        if option.takesValue {
          if !letters.isEmpty {
            let text = String(letters.hasPrefix("=") ? letters.dropFirst() : letters)
            parsed.setValue(try convert(text, for: option, in: spec), for: option)
          } else if index < arguments.count {
            parsed.setValue(try convert(arguments[index], for: option, in: spec), for: option)
            index += 1
          } else {
            throw fail("Missing value for '\(option.errorLabel)'")
          }
          break
        }
        parsed.setFlag(option)
      }
    }

    for group in spec.exclusive {
      let given = group.filter { parsed.has($0) }
      if given.count > 1 {
        throw fail("The options '--\(given[0].long)' and '--\(given[1].long)' cannot be combined")
      }
    }
    if parsed.operands.count < requiredOperands {
      throw fail("Missing expected argument '<\(spec.operands[parsed.operands.count].name)>'")
    }
    if parsed.operands.count > spec.operands.count && !spec.repeatsOperands {
      throw fail("Unexpected argument '\(parsed.operands[spec.operands.count])'")
    }
    if spec.requiresCommand && (parsed.command ?? []).isEmpty {
      throw fail("Missing expected argument '<command>' (give it after '--')")
    }
    return .run(parsed)
  }

  /// `text` converted to the kind `option` declares.
  /// - Throws: ``UsageError`` naming the value, the option and what was expected.
  static func convert(_ text: String, for option: OptionSpec, in spec: CommandSpec) throws(UsageError) -> ParsedArguments.ParsedValue {
    func invalid(_ expected: String) -> UsageError {
      UsageError(message: "The value '\(text)' is invalid for '\(option.errorLabel)': expected \(expected)", command: spec)
    }
    switch option.kind {
    case .text, .file:
      return .text(text)
    case .seconds(let positive):
      guard let seconds = Double(text), seconds.isFinite, seconds >= 0 else {
        throw invalid("a number of seconds, such as 5 or 0.5")
      }
      if positive && seconds == 0 { throw invalid("a number of seconds above 0") }
      return .seconds(duration(seconds: seconds), text: text)
    case .integer(let range):
      guard let number = Int(text), range.contains(number) else {
        throw invalid(range.upperBound == Int.max
          ? "an integer of at least \(range.lowerBound)"
          : "an integer from \(range.lowerBound) to \(range.upperBound)")
      }
      return .integer(number)
    case .number(let range):
      guard let number = Double(text), number.isFinite, range.contains(number) else {
        throw invalid("a number from \(decimal(range.lowerBound)) to \(decimal(range.upperBound))")
      }
      return .number(number)
    case .choice(let words):
      guard words.contains(text) else {
        throw invalid(words.dropLast().joined(separator: ", ") + (words.count > 1 ? " or " : "") + (words.last ?? ""))
      }
      return .text(text)
    case .signal:
      guard let signal = Signal.named(text) else {
        throw invalid("a signal name such as HUP or USR1, or a number from 1 to \(Signal.highestNumber)")
      }
      return .signal(signal)
    }
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
        if !token.contains("="), spec.option(long: token.dropFirst(2))?.takesValue == true { index += 1 }
      } else {
        for (offset, letter) in token.dropFirst().enumerated() where spec.option(short: letter)?.takesValue == true {
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

  /// `number` without a needless `.0`.
  private static func decimal(_ number: Double) -> String {
    number == number.rounded() ? String(Int(number)) : String(number)
  }
}
