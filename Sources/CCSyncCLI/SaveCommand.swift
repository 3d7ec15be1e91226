import CCSync
import CCSyncProcesses

/// `ccsync save [--merge] [-n] [-w SECS] FILE`: replace the file with standard input, or
/// apply standard input to it as an RFC 7396 merge patch.
enum SaveCommand: Command {
  static let merge = OptionSpec(nil, "merge", help: "Apply standard input as an RFC 7396 merge patch instead.")

  static let spec = CommandSpec(
    name: "save", overview: "Replace a JSON file with the document read from standard input.",
    operands: [Help.fileOperand],
    options: [Help.jsonc, merge] + Help.lockOptions + GateOptions.all + [HistoryOptions.keep] + WaitHosts.all,
    discussion: "Exits 65 and leaves the file untouched when standard input is not valid JSON. Creates <file> when it does not exist (its directory must exist).\n" + Help.etcdWriteNote)

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let address = try arguments.address()
    let file = address.name
    let input = try StandardStreams.readStandardInput()
    let value: JSONValue
    do {
      value = try JSONValue(parsing: input)
    } catch {
      throw CommandFailure(ExitCode.dataError, "standard input is not valid JSON: \(error); '\(file)' left untouched")
    }
    let writer = try DocumentWriter(address: address, arguments: arguments)
    if arguments.has(merge) {
      try writer.modify(createIfMissing: true) { document in
        document = document.mergePatched(with: value)
      }
    } else {
      try writer.modify(createIfMissing: true, policy: .whenTextDiffers) { document in
        document = DocumentGate.keepingSchemaMember(of: document, in: value)
      }
    }
    try WaitHosts.wait(arguments, address: address)
    return ExitCode.success
  }
}
