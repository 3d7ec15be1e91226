import CCSync
import CCSyncProcesses

/// `ccsync set [-s | -j] [-n] [-w SECS] FILE PATH VALUE`.
enum SetCommand: Command {
  static let string = OptionSpec("s", "string", help: "Always store <value> as a string.")
  static let json = OptionSpec("j", "json", help: "Require <value> to be JSON (status 65 otherwise).")

  static let spec = CommandSpec(
    name: "set", overview: "Set the value at <path> in a JSON file.",
    operands: [
      Help.fileOperand,
      OperandSpec("path", help: "Dotted path or JSON Pointer; missing objects on the way are created."),
      OperandSpec("value", help: "JSON when it parses as JSON (42, true, \"x\", {\"a\":1}), a string otherwise; text starting with {, [ or \" must be valid JSON."),
    ],
    options: [Help.jsonc, string, json] + Help.lockOptions + GateOptions.all + [HistoryOptions.keep] + WaitHosts.all,
    exclusive: [[string, json]],
    discussion: "Creates <file> as {} first when it does not exist (its directory must exist). The write takes the file's lock, re-reads the file under it, and replaces it atomically; an invalid file is left untouched (status 65).\n" + Help.etcdWriteNote)

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let address = try arguments.address()
    let file = address.name
    // An empty PATH is most often an unset shell variable (`set f "$KEY" v`); replacing the
    // whole document must be asked for by name.
    if arguments.operands[1].isEmpty {
      throw arguments.usageError("The path is empty; to replace the whole document, give '.' as <path> (or use 'ccsync save')")
    }
    let path = try arguments.path(at: 1)
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
    if arguments.has(string) {
      value = .string(text)
    } else {
      do {
        value = try JSONValue(parsing: text, options: JSONParser.Options(maximumDepth: depthLeft))
      } catch where error.kind == .nestingTooDeep {
        throw tooDeep
      } catch {
        // Text that starts like a JSON object, array or string was meant as JSON: a typo in
        // it must not be stored as a string ('{oops'). `-s` stores any text as a string.
        guard !arguments.has(json), !Self.looksLikeJSON(text) else {
          throw CommandFailure(ExitCode.dataError, "the value '\(text)' is not valid JSON: \(error); nothing written (give -s to store it as a string)")
        }
        value = .string(text)
      }
    }
    try DocumentWriter(address: address, arguments: arguments).modify(createIfMissing: true) { document in
      try document.setValue(value, at: path)
    }
    try WaitHosts.wait(arguments, address: address)
    return ExitCode.success
  }

  /// Whether `text` starts (after blanks) as a JSON object, array or string does.
  static func looksLikeJSON(_ text: String) -> Bool {
    guard let first = text.first(where: { $0 != " " && $0 != "\t" && $0 != "\n" && $0 != "\r" }) else { return false }
    return first == "{" || first == "[" || first == "\""
  }
}
