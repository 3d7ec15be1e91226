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
      // Read as the document is: JWCC for a .jsonc or .hujson document (or --jsonc).
      value = try DocumentReader.parse(input, path: file)
    } catch {
      guard case .invalidJSON(_, let reason) = error else { throw error }
      throw CommandFailure(ExitCode.dataError, "standard input is not valid JSON: \(reason); '\(file)' left untouched")
    }
    let writer = try DocumentWriter(address: address, arguments: arguments)
    if arguments.has(merge) {
      try writer.modify(createIfMissing: true) { document in
        document = document.mergePatched(with: value)
      }
    } else {
      // Standard input is the new document: written as it is, its layout and comments
      // included (the document's `$schema` kept when it has none).
      do {
        _ = try writer.document.replaceText(input, ifUnchangedFrom: nil, wait: writer.wait)
        if let limit = writer.historyLimit { try writer.document.setHistoryLimit(limit) }
      } catch StorageError.store(.lockUnavailable(let lockPath)) {
        throw writer.wait.failure(file: file, lockPath: lockPath, code: ExitCode.failure)
      }
    }
    try WaitHosts.wait(arguments, address: address)
    return ExitCode.success
  }
}
