import CCSync
import CCSyncProcesses

/// The options and helpers `log`, `diff` and `rollback` share.
enum HistoryOptions {
  /// `--keep N` on every command that writes: how many versions a file's history keeps.
  static let keep = OptionSpec(nil, "keep", value: "n", .integer(0...1_000_000), help: "Keep the last <n> versions of a file in its history (stored with the history; default 20; 0 turns it off).")
  static let json = OptionSpec(nil, "json", help: "Print JSON instead of lines.")

  /// The changes from `older` to `newer`: one per changed path (arrays whole).
  static func changes(from older: JSONValue, to newer: JSONValue) -> [(path: JSONPath, old: JSONValue?, new: JSONValue?)] {
    JSONChangeSet(from: older, to: newer).changes.map { change in
      let path = JSONPath(tokens: change.path)
      let old = try? older.value(at: path)
      switch change {
      case .set(_, let value): return (path, old ?? nil, value)
      case .remove: return (path, old ?? nil, nil)
      }
    }
  }

  /// Whether a change at `changed` touches `path`: one is within the other.
  static func touches(_ changed: JSONPath, _ path: JSONPath) -> Bool {
    let count = min(changed.components.count, path.components.count)
    return Array(changed.components.prefix(count)) == Array(path.components.prefix(count))
  }
}

/// `ccsync log FILE|URL [PATH] [-n N] [--json]`: the versions kept, newest first.
enum LogCommand: Command {
  static let count = OptionSpec("n", "count", value: "n", .integer(1...1_000_000), help: "Show at most <n> versions.")

  static let spec = CommandSpec(
    name: "log", overview: "List the versions kept of a file or an etcd key, newest first: id, time, author, the paths changed.",
    operands: [Help.fileOperand, OperandSpec("path", optional: true, help: "Only the versions that changed the value at <path>.")],
    options: [count, HistoryOptions.json],
    discussion: "One line per version and nothing else, its fields separated by tabs: the id (a file's version number, or an etcd key's revision), the time (UTC), the author (user@host pid N (program), or - for a version written by a program that is not ccsync), and the paths it changed from the version before it (- for the oldest kept), with '(rollback of ID)' after a rollback. The current version is the first line. A file keeps its last 20 versions in '.<name>.history/' beside it (--keep on any write changes it); an etcd key's versions are its revisions until the cluster compacts them. --json prints one JSON array of {id, time, author, current, rollbackOf, changed}.")

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let address = try arguments.address()
    let document = address.document()
    let filter = arguments.operands.count > 1 ? try arguments.path(at: 1) : nil
    let versions = try document.versions()
    guard !versions.isEmpty else {
      if try document.read() == nil { throw address.missing }
      return ExitCode.success
    }
    var values: [String: JSONValue] = [:]
    func value(_ id: String) -> JSONValue? {
      if let known = values[id] { return known }
      let parsed = try? document.value(ofVersion: id)
      values[id] = parsed
      return parsed
    }
    var shown: [JSONValue] = []
    var lines: [String] = []
    for (index, version) in versions.enumerated() {
      if let limit = arguments.integer(count), shown.count >= limit { break }
      var changed: [JSONPath]?
      if index + 1 < versions.count, let older = value(versions[index + 1].id), let newer = value(version.id) {
        changed = HistoryOptions.changes(from: older, to: newer).map(\.path)
      }
      if let filter {
        guard let changed, changed.contains(where: { HistoryOptions.touches($0, filter) }) else { continue }
      }
      let paths = changed.map { $0.isEmpty ? "(none)" : $0.map { $0.isRoot ? "." : $0.description }.joined(separator: ",") } ?? "-"
      var line = [version.id, version.time ?? "-", version.author?.description ?? "-", paths].joined(separator: "\t")
      if let origin = version.rollbackOf { line += " (rollback of \(origin))" }
      lines.append(line)
      var object = JSONObject()
      object["id"] = .string(version.id)
      object["time"] = version.time.map { .string($0) } ?? .null
      object["author"] = version.author.map { author in
        var object = JSONObject()
        object["host"] = .string(author.host)
        object["user"] = .string(author.user)
        object["pid"] = .number(JSONNumber(Int64(author.pid)))
        object["program"] = .string(author.program)
        return .object(object)
      } ?? .null
      object["current"] = .bool(version.isCurrent)
      object["rollbackOf"] = version.rollbackOf.map { .string($0) } ?? .null
      object["changed"] = changed.map { .array($0.map { .string($0.pointer) }) } ?? .null
      shown.append(.object(object))
    }
    if arguments.has(HistoryOptions.json) {
      StandardStreams.writeLine(JSONValue.array(shown).formatted(.pretty))
    } else {
      for line in lines { StandardStreams.writeLine(line) }
    }
    return ExitCode.success
  }
}

/// `ccsync diff FILE|URL [A [B]]`: the field-level differences between two versions.
enum DiffCommand: Command {
  static let exitCode = OptionSpec(nil, "exit-code", help: "Exit 1 when the versions differ (as git diff --exit-code).")

  static let spec = CommandSpec(
    name: "diff", overview: "Show the field-level differences between two versions of a file or an etcd key.",
    operands: [
      Help.fileOperand,
      OperandSpec("a", optional: true, help: "The older version's id (default: the one before the current)."),
      OperandSpec("b", optional: true, help: "The newer version's id (default: the current one)."),
    ],
    options: [HistoryOptions.json, exitCode],
    discussion: "One line per changed path: 'PATH: OLD -> NEW', values as compact JSON, '(absent)' for a value one side lacks. --json prints an RFC 6902 JSON Patch that turns A into B. Exits 0 whether or not they differ, 1 with --exit-code when they do, 66 when a version is not kept (naming the oldest kept).")

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let address = try arguments.address()
    let document = address.document()
    let versions = try document.versions(limit: 2)
    guard let current = versions.first else { throw address.missing }
    let newerID = arguments.operands.count > 2 ? arguments.operands[2] : current.id
    let olderID: String
    if arguments.operands.count > 1 {
      olderID = arguments.operands[1]
    } else {
      guard versions.count > 1 else {
        throw CommandFailure(ExitCode.noInput, "'\(address.name)' has no version kept before the current one (\(current.id))")
      }
      olderID = versions[1].id
    }
    let older = try document.value(ofVersion: olderID)
    let newer = try document.value(ofVersion: newerID)
    let changes = HistoryOptions.changes(from: older, to: newer)
    if arguments.has(HistoryOptions.json) {
      let patch: [JSONValue] = changes.map { change in
        var operation = JSONObject()
        operation["op"] = .string(change.new == nil ? "remove" : (change.old == nil ? "add" : "replace"))
        operation["path"] = .string(change.path.pointer)
        if let new = change.new { operation["value"] = new }
        return .object(operation)
      }
      StandardStreams.writeLine(JSONValue.array(patch).formatted(.compact))
    } else {
      for change in changes {
        let old = change.old.map { $0.formatted(.compact) } ?? "(absent)"
        let new = change.new.map { $0.formatted(.compact) } ?? "(absent)"
        StandardStreams.writeLine("\(change.path.isRoot ? "." : change.path.description): \(old) -> \(new)")
      }
    }
    return arguments.has(exitCode) && !changes.isEmpty ? ExitCode.failure : ExitCode.success
  }
}

/// `ccsync rollback FILE|URL --to ID [PATH]`: a new version with version ID's content.
enum RollbackCommand: Command {
  static let to = OptionSpec(nil, "to", value: "id", help: "The version to restore (an id 'ccsync log' shows).")

  static let spec = CommandSpec(
    name: "rollback", overview: "Write a new version whose content (or value at <path>) is that of an earlier version.",
    operands: [Help.fileOperand, OperandSpec("path", optional: true, help: "Restore only the value at <path> (removed where that version had none).")],
    options: [to] + Help.lockOptions + GateOptions.all + [HistoryOptions.keep] + WaitHosts.all,
    discussion: "Written like any other write: under the lock (or by compare-and-swap), judged by the schema and --check, and kept in the history as a rollback of <id>. A whole rollback restores the version's exact bytes. Exits 66 when the version is not kept (rotated out, compacted) or never was, naming the oldest kept; 65 when the gate refuses it (nothing written); 64 without --to.")

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    guard let id = arguments.text(to) else { throw arguments.usageError("Missing expected option '--to <id>'") }
    let address = try arguments.address()
    let path = try arguments.path(at: 1)
    let document = address.document(gate: try GateOptions.gate(arguments, documentName: address.name))
    do {
      try document.rollback(to: id, at: path, wait: ContentionWait(arguments))
    } catch .store(.lockUnavailable(let lockPath)) {
      throw ContentionWait(arguments).failure(file: address.name, lockPath: lockPath, code: ExitCode.failure)
    }
    if let keep = arguments.integer(HistoryOptions.keep) { try document.setHistoryLimit(keep) }
    try WaitHosts.wait(arguments, address: address)
    return ExitCode.success
  }
}
