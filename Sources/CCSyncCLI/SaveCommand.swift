import CCSync
import CCSyncProcesses

/// `ccsync save [--merge] [-n] [-w SECS] FILE`: replace the file with standard input, or
/// apply standard input to it as an RFC 7396 merge patch.
enum SaveCommand {
  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let address = try arguments.address(in: Help.save)
    let file = address.name
    let wait = try LockWait(arguments, spec: Help.save)
    let input = try StandardStreams.readStandardInput()
    let value: JSONValue
    do {
      value = try JSONValue(parsing: input)
    } catch {
      throw CommandFailure(ExitCode.dataError, "standard input is not valid JSON: \(error); '\(file)' left untouched")
    }
    let writer = DocumentWriter(address: address, wait: wait)
    if arguments.has("merge") {
      try writer.modify(createIfMissing: true) { document in
        document = document.mergePatched(with: value)
      }
    } else {
      try writer.modify(createIfMissing: true, policy: .whenTextDiffers) { document in
        document = value
      }
    }
    return ExitCode.success
  }
}
