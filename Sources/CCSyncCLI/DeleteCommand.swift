import CCSync

/// `ccsync delete [-n] [-w SECS] FILE PATH`.
enum DeleteCommand {
  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let file = arguments.operands[0]
    let path = try arguments.path(at: 1, in: Help.delete)
    let wait = try LockWait(arguments, spec: Help.delete)
    let removed = try DocumentWriter(path: file, wait: wait).modify(createIfMissing: false) { document in
      try document.removeValue(at: path)
    }
    guard removed != nil else {
      throw CommandFailure(ExitCode.failure, "no value at '\(path)' in '\(file)'")
    }
    return ExitCode.success
  }
}
