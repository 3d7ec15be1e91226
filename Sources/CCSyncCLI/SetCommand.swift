import CCSync
import CCSyncProcesses

/// `ccsync set [-s | -j] [-n] [-w SECS] FILE PATH VALUE`.
enum SetCommand {
  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let spec = Help.set
    if arguments.has("string") && arguments.has("json") {
      throw UsageError(message: "The options '--string' and '--json' cannot be combined", command: spec)
    }
    let address = try arguments.address(in: spec)
    let file = address.name
    // An empty PATH is most often an unset shell variable (`set f "$KEY" v`); replacing the
    // whole document must be asked for by name.
    if arguments.operands[1].isEmpty {
      throw UsageError(message: "The path is empty; to replace the whole document, give '.' as <path> (or use 'ccsync save')", command: spec)
    }
    let path = try arguments.path(at: 1, in: spec)
    let wait = try LockWait(arguments, spec: spec)
    let text = arguments.operands[2]
    // The document must stay within the nesting limit its readers apply: each step of PATH
    // is one level, and VALUE may nest as deep as the rest. Text that breaks the limit is
    // meant as JSON, not as a string.
    let limit = JSONParser.Options.defaultMaximumDepth
    let depthLeft = limit - path.components.count
    let tooDeep = CommandFailure(
      ExitCode.dataError,
      "the value at '\(arguments.operands[1])' would nest '\(file)' deeper than \(limit) levels of arrays and objects, the limit; nothing written")
    guard depthLeft >= 0 else { throw tooDeep }
    let value: JSONValue
    if arguments.has("string") {
      value = .string(text)
    } else {
      do {
        value = try JSONValue(parsing: text, options: JSONParser.Options(maximumDepth: depthLeft))
      } catch where error.kind == .nestingTooDeep {
        throw tooDeep
      } catch {
        guard !arguments.has("json") else {
          throw CommandFailure(ExitCode.dataError, "the value '\(text)' is not valid JSON: \(error)")
        }
        value = .string(text)
      }
    }
    try DocumentWriter(address: address, wait: wait).modify(createIfMissing: true) { document in
      try document.setValue(value, at: path)
    }
    return ExitCode.success
  }
}
