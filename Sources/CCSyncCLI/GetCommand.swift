import CCSync
import CCSyncProcesses

/// `ccsync get [-r] [-c] FILE [PATH]` and `ccsync load FILE`: print a value.
enum GetCommand {
  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let address = try arguments.address(in: Help.get)
    let path = try arguments.path(at: 1, in: Help.get)
    let document = try DocumentReader.read(address)
    guard let value = try document.value(at: path) else {
      throw CommandFailure(ExitCode.failure, "no value at '\(path)' in '\(address.name)'")
    }
    if arguments.has("raw"), case .string(let text) = value {
      StandardStreams.writeLine(text)
      return ExitCode.success
    }
    StandardStreams.writeBytes(printed(value, compact: arguments.has("compact")))
    return ExitCode.success
  }

  /// `ccsync load FILE`: the whole document, pretty.
  static func runLoad(_ arguments: ParsedArguments) throws -> Int32 {
    let document = try DocumentReader.read(try arguments.address(in: Help.load))
    StandardStreams.writeBytes(printed(document, compact: false))
    return ExitCode.success
  }

  /// `value` as JSON text ending in one newline.
  static func printed(_ value: JSONValue, compact: Bool) -> [UInt8] {
    var bytes = value.formattedBytes(compact ? .compact : .pretty)
    if bytes.last != UInt8(ascii: "\n") { bytes.append(UInt8(ascii: "\n")) }
    return bytes
  }
}
