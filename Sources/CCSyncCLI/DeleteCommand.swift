import CCSync
import CCSyncProcesses

/// `ccsync delete [-n] [-w SECS] FILE PATH`.
enum DeleteCommand: Command {
  static let spec = CommandSpec(
    name: "delete", overview: "Remove the value at <path> from a JSON file.",
    operands: [Help.fileOperand, OperandSpec("path", help: "Dotted path or JSON Pointer.")],
    options: [Help.jsonc] + Help.lockOptions + GateOptions.all + [HistoryOptions.keep] + WaitHosts.all,
    discussion: "Exits 1, leaving the file unchanged, when there is no value at <path>.\n" + Help.etcdWriteNote)

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let address = try arguments.address()
    let path = try arguments.path(at: 1)
    // A document has no container to be removed from. As with `set`, an empty PATH is most
    // often an unset shell variable (`delete f "$KEY"`): a usage error, not bad data.
    if path.isRoot {
      let message = arguments.operands[1].isEmpty
        ? "The path is empty; give the path of the value to delete (the whole document, '.', cannot be deleted)"
        : "The path '\(arguments.operands[1])' is the whole document, which cannot be deleted; give the path of a value in it"
      throw arguments.usageError(message)
    }
    let removed = try DocumentWriter(address: address, arguments: arguments).modify(createIfMissing: false) { document in
      try document.removeValue(at: path)
    }
    guard removed != nil else {
      throw CommandFailure(ExitCode.failure, "no value at '\(path)' in '\(address.name)'")
    }
    try WaitHosts.wait(arguments, address: address)
    return ExitCode.success
  }
}
