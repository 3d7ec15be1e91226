import CCSync
import CCSyncProcesses

/// `ccsync get [-r] [-c] FILE [PATH]`: print a value.
enum GetCommand: Command {
  static let raw = OptionSpec("r", "raw", help: "Print a string without quotes and escapes.")
  static let compact = OptionSpec("c", "compact", help: "Print on one line.")

  static let spec = CommandSpec(
    name: "get", overview: "Print the value at <path> in a JSON file (the whole document without <path>).",
    operands: [Help.fileOperand, Help.pathOperand],
    options: [raw, compact, Help.jsonc],
    discussion: "Exits 1 when there is no value at <path>, 65 when <file> is not valid JSON or <path> goes through a value that is not an object or array, 66 when <file> does not exist; for an etcd key, 69 when no member answers and 77 when it refuses the credentials ($ETCDCTL_USER=user:password).")

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let address = try arguments.address()
    let path = try arguments.path(at: 1)
    let document = try DocumentReader.read(address)
    guard let value = try document.value(at: path) else {
      throw CommandFailure(ExitCode.failure, "no value at '\(path)' in '\(address.name)'")
    }
    if arguments.has(raw), case .string(let text) = value {
      StandardStreams.writeLine(text)
      return ExitCode.success
    }
    StandardStreams.writeBytes(printed(value, compact: arguments.has(compact)))
    return ExitCode.success
  }

  /// `value` as JSON text ending in one newline.
  static func printed(_ value: JSONValue, compact: Bool) -> [UInt8] {
    var bytes = value.formattedBytes(compact ? .compact : .pretty)
    if bytes.last != UInt8(ascii: "\n") { bytes.append(UInt8(ascii: "\n")) }
    return bytes
  }
}

/// `ccsync load FILE`: the whole document, pretty.
enum LoadCommand: Command {
  static let spec = CommandSpec(
    name: "load", overview: "Print the whole document, pretty (the same as 'ccsync get <file>').",
    operands: [Help.fileOperand], options: [Help.jsonc])

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let document = try DocumentReader.read(try arguments.address())
    StandardStreams.writeBytes(GetCommand.printed(document, compact: false))
    return ExitCode.success
  }
}
