import CCSync
import CCSyncProcesses

/// `ccsync delete [-n] [-w SECS] FILE PATH`.
enum DeleteCommand {
  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let spec = Help.delete
    let address = try arguments.address(in: spec)
    let path = try arguments.path(at: 1, in: spec)
    // A document has no container to be removed from. As with `set`, an empty PATH is most
    // often an unset shell variable (`delete f "$KEY"`): a usage error, not bad data.
    if path.isRoot {
      let message = arguments.operands[1].isEmpty
        ? "The path is empty; give the path of the value to delete (the whole document, '.', cannot be deleted)"
        : "The path '\(arguments.operands[1])' is the whole document, which cannot be deleted; give the path of a value in it"
      throw UsageError(message: message, command: spec)
    }
    let wait = try LockWait(arguments, spec: spec)
    let removed = try DocumentWriter(address: address, wait: wait).modify(createIfMissing: false) { document in
      try document.removeValue(at: path)
    }
    guard removed != nil else {
      throw CommandFailure(ExitCode.failure, "no value at '\(path)' in '\(address.name)'")
    }
    return ExitCode.success
  }
}
