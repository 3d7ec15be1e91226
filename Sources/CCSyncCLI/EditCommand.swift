import CCSync
import CCSyncProcesses

/// `ccsync edit [-n] [-w SECS] FILE`: edit a copy in `$VISUAL`, `$EDITOR` or `vi`, then apply
/// the fields the edit changed to the file as it is now, under the lock: a three-way merge
/// with the version the copy was made from as the base.
enum EditCommand: Command {
  static let spec = CommandSpec(
    name: "edit", overview: "Edit a JSON file in $VISUAL, $EDITOR or vi, merging with changes made meanwhile.",
    operands: [Help.fileOperand], options: [Help.jsonc] + Help.lockOptions + GateOptions.all + [HistoryOptions.keep] + WaitHosts.all,
    discussion: "Opens a copy. Unchanged: status 0, nothing written. Invalid JSON: status 65, the file untouched, the copy kept. When the file did not change meanwhile, the edited text is written as it is, comments and layout included (a change of them alone too). Otherwise the fields the edit changed are applied to the current file under the lock, so changes another process made meanwhile survive (the edit's comment changes are then not applied); a field both changed: status 75, both values shown, nothing written.\n" + Help.etcdWriteNote)

  /// Fields changed both in the edit and in the file meanwhile, to differing values.
  struct Conflict: Error {
    var paths: [JSONPath]
    var current: JSONValue
  }

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let address = try arguments.address()
    let file = address.name
    let (bytes, copyName) = try readForEditing(address)
    let original = try DocumentReader.parse(bytes, path: file)
    let copy: EditCopy
    do {
      copy = try EditCopy(name: try copyName(), bytes: bytes)
    } catch let error as SystemError {
      // FILE exists: a failure here is the copy's ($TMPDIR missing or full), not FILE's (66).
      throw CommandFailure(error.isInputOutput ? ExitCode.ioError : ExitCode.cannotCreate,
                           "cannot make the copy to edit: \(error)")
    }

    let status: Int32
    do {
      status = try runEditor(on: copy.path)
    } catch let error as SpawnError {
      copy.remove()
      throw CommandFailure(error.exitCode, "\(error); '\(file)' left untouched")
    } catch {
      // The editor may have run, and may have saved the user's edit: keep the copy.
      throw CommandFailure(ExitCode.ioError, "cannot wait for the editor: \(error); '\(file)' left untouched")
        .keeping(copy)
    }
    guard status == 0 else {
      copy.remove()
      throw CommandFailure(status, "the editor exited with status \(status); '\(file)' left untouched")
    }
    let editedBytes: [UInt8]
    do {
      editedBytes = try SharedFile(path: copy.path).read()?.bytes ?? []
    } catch {
      throw CommandFailure(error, file: copy.path).keeping(copy)
    }
    if editedBytes == bytes {
      copy.remove()
      StandardStreams.writeLine("ccsync: no changes; nothing written", toStandardError: true)
      return ExitCode.success
    }
    let edited: JSONValue
    do {
      edited = try DocumentReader.parse(editedBytes, path: file)
    } catch {
      throw CommandFailure(ExitCode.dataError, "'\(copy.path)' is not valid JSON: \(error.description); '\(file)' left untouched")
        .keeping(copy)
    }
    // Nothing changed meanwhile: the edited text is written as it is, comments and layout
    // included (a change of comments or layout alone too).
    do {
      let writer = try DocumentWriter(address: address, arguments: arguments)
      if try writer.document.replaceText(editedBytes, ifUnchangedFrom: bytes, wait: writer.wait) {
        copy.remove()
        try WaitHosts.wait(arguments, address: address)
        return ExitCode.success
      }
    } catch let error as UsageError {
      throw error
    } catch {
      throw CommandFailure(error, file: file).keeping(copy)
    }
    let ours = JSONChangeSet(from: original, to: edited)
    if ours.isEmpty {
      copy.remove()
      StandardStreams.writeLine("ccsync: no changes to any value, and the file changed meanwhile; nothing written", toStandardError: true)
      return ExitCode.success
    }

    do {
      // On an etcd key the write is a compare-and-swap: when another write comes between its
      // read and its swap, this runs again on the newer version, with the same three-way merge.
      try DocumentWriter(address: address, arguments: arguments).modify(createIfMissing: false) { current in
        let theirs = JSONChangeSet(from: original, to: current)
        let conflicts = ours.conflicts(with: theirs)
        guard conflicts.isEmpty else { throw Conflict(paths: conflicts, current: current) }
        current = ours.applied(to: current)
      }
    } catch let conflict as Conflict {
      report(conflict, file: file, original: original, edited: edited, holder: address.isFile ? "file" : "key")
      throw CommandFailure(ExitCode.conflict, "nothing written").keeping(copy)
    } catch {
      throw CommandFailure(error, file: file).keeping(copy)
    }
    copy.remove()
    try WaitHosts.wait(arguments, address: address)
    return ExitCode.success
  }

  /// The bytes to edit and the name of the copy: the file's own name (found once the bytes
  /// have parsed), or for an etcd key its last component with `.json` added when it lacks it
  /// (`cfg/app` is edited as `app.json`), so that the editor sees a JSON file.
  private static func readForEditing(_ address: DocumentAddress) throws -> (bytes: [UInt8], name: () throws -> String) {
    switch address {
    case .file(let path):
      let shared = SharedFile(path: path)
      guard let snapshot = try shared.read() else { throw StorageError.missingFile(path: path) }
      return (snapshot.bytes, { FilePath.name(of: try shared.resolvedPath()) })
    case .etcd(let location):
      guard let bytes = try address.document().readBytes() else { throw address.missing }
      let last = location.key.split(separator: "/").last.map(String.init) ?? ""
      let name = last.isEmpty ? "document" : last
      return (bytes, { name.hasSuffix(".json") ? name : name + ".json" })
    }
  }

  /// - Parameter holder: what holds the document, as the message says: `file` or `key`.
  private static func report(_ conflict: Conflict, file: String, original: JSONValue, edited: JSONValue, holder: String) {
    func show(_ document: JSONValue, _ path: JSONPath) -> String {
      guard let value = try? document.value(at: path) else { return "(none)" }
      return value.formatted(.compact)
    }
    var lines = ["ccsync: '\(file)' changed while it was being edited, and both changed the same fields:"]
    for path in conflict.paths {
      lines.append("ccsync:   \(path): edited \(show(edited, path)), \(holder) now \(show(conflict.current, path)) (was \(show(original, path)))")
    }
    StandardStreams.write(lines.map { $0 + "\n" }.joined(), toStandardError: true)
  }

  /// Runs `$VISUAL`, `$EDITOR` or `vi` on `path` through `sh -c`, as git does, so the variable
  /// may hold arguments (`code --wait`). SIGINT and SIGQUIT are ignored here meanwhile: they
  /// belong to the editor. Afterwards they get back the action this process started with.
  /// - Returns: the editor's status as a shell reports it (128+N when killed by signal N).
  /// - Throws: ``SpawnError`` when the editor cannot be started; `SystemError` when waiting
  ///   for it fails, so that its status is unknown.
  static func runEditor(on path: String) throws -> Int32 {
    let editor = ThisProcess.environmentValue("VISUAL") ?? ThisProcess.environmentValue("EDITOR") ?? "vi"
    try? Signal.interrupt.ignore()
    try? Signal.quit.ignore()
    defer {
      try? Signal.interrupt.restoreActionAtStart()
      try? Signal.quit.restoreActionAtStart()
    }
    return try Subprocess.start(["/bin/sh", "-c", editor + " \"$@\"", editor, path]).waitForExit().shellStatus
  }
}

/// The copy `ccsync edit` opens: `$TMPDIR/ccsync-edit-XXXXXX/NAME`, mode 0600, so the editor
/// sees the file's name (and its syntax highlighting).
struct EditCopy {
  let directory: String
  let path: String

  init(name: String, bytes: [UInt8]) throws(SystemError) {
    directory = try FileTree.makeTemporaryDirectory(prefix: "ccsync-edit")
    path = FilePath.join(directory, name)
    do {
      try FileDescriptor.createNew(path, permissions: 0o600).writeAll(bytes)
    } catch {
      remove()  // a copy that could not be made is not left behind
      throw error
    }
  }

  /// Removes the copy and its directory; a directory the editor left other files in stays.
  func remove() {
    try? FileTree.removeFile(path)
    try? FileTree.removeEmptyDirectory(directory)
  }
}

extension CommandFailure {
  /// This failure with a note that the edited copy is kept, and where.
  func keeping(_ copy: EditCopy) -> CommandFailure {
    CommandFailure(code, message + "\nccsync: the edited copy is kept at \(copy.path)")
  }
}
