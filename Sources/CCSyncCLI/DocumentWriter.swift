import CCSync
import CCSyncProcesses

/// The CLI's writes: `SharedDocument.update` with the two choices a command makes itself:
/// whether a missing file is created, and whether the whole text is rewritten or only a change
/// in meaning is written. The library does the rest (docs/ARCHITECTURE.md, "A save, step by step"): the exclusive lock,
/// the re-read, an invalid file left untouched and reported, the atomic durable replace.
struct DocumentWriter {
  /// When to replace the file after the change.
  typealias WritePolicy = SharedDocument.WritePolicy

  let address: DocumentAddress
  let document: SharedDocument
  let wait: ContentionWait
  /// How many versions the file's history is to keep from this write on (`--keep`).
  var historyLimit: Int?

  /// A writer of a file or an etcd key. On a key a write is a compare-and-swap, not a lock:
  /// `wait` bounds the whole write (its calls and retries) instead, and `change` may run
  /// more than once, each time on the version the key holds then.
  init(address: DocumentAddress, wait: ContentionWait, gate: DocumentGate = .standard) {
    self.address = address
    document = address.document(gate: gate)
    self.wait = wait
  }

  /// A writer with the wait and the gate `arguments` ask for.
  init(address: DocumentAddress, arguments: ParsedArguments) throws(UsageError) {
    self.init(address: address, wait: ContentionWait(arguments), gate: try GateOptions.gate(arguments, documentName: address.name))
    if arguments.declares(HistoryOptions.keep) { historyLimit = arguments.integer(HistoryOptions.keep) }
  }

  /// Runs `change` on the current document under the lock and writes the result.
  /// - Parameters:
  ///   - createIfMissing: start from `{}` when the file does not exist (its directory must);
  ///     otherwise a missing file is ``StorageError/missingFile(path:)``.
  ///   - change: gets the current document; may throw to write nothing.
  /// - Returns: what `change` returned.
  /// - Throws: ``StorageError/missingDirectory(path:)``, ``StorageError/lockUnavailable(path:)``,
  ///   ``StorageError/invalidJSON(path:_:)``, write errors, and what `change` throws.
  @discardableResult
  func modify<Result>(
    createIfMissing: Bool, policy: WritePolicy = .whenChanged,
    _ change: (inout JSONValue) throws -> Result
  ) throws -> Result {
    if !createIfMissing, case .file(let path) = address, !FileTree.exists(path) {
      // Checked before the lock, so that a missing file leaves nothing behind (no lock file).
      throw StorageError.missingFile(path: path)
    }
    if case .file(let path) = address { Self.waitOutEmptyFileGrace(path) }
    do {
      let result = try document.update(
        wait: wait, invalidFile: .fail, missingFile: createIfMissing ? .create : .fail, writes: policy, change)
      // Set after the write, so that a failed write makes no history folder.
      if let historyLimit { try document.setHistoryLimit(historyLimit) }
      // Every command that writes exits right after: the version it wrote is left to the exit.
      document.leaveKeptVersionToExit()
      return result
    } catch StorageError.missingFile where !address.isFile {
      throw address.missing
    } catch StorageError.store(.lockUnavailable(let lockPath)) {
      throw wait.failure(file: address.name, lockPath: lockPath, code: ExitCode.failure)
    } catch StoreError.lockUnavailable(let lockPath) {
      throw wait.failure(file: address.name, lockPath: lockPath, code: ExitCode.failure)
    }
  }
}

extension DocumentWriter {
  /// Waits, when `path` is an empty file changed less than ``FollowGrace/empty`` ago (the followers' grace), until it is
  /// that old: `touch app.json; ccsync set app.json a 1` then writes into it as into `{}`
  /// instead of taking it for a writer caught mid-way (65).
  static func waitOutEmptyFileGrace(_ path: String) {
    guard let status = (try? FileSystem.status(path)) ?? nil, let left = FollowGrace.emptyGraceLeft(status.identity) else { return }
    ContinuousClock.sleepThread(for: left + .milliseconds(10))
  }
}

/// Reading for the commands that only read: the file must exist and be valid JSON.
enum DocumentReader {
  /// The parsed document at `path`.
  /// - Throws: ``StorageError/missingFile(path:)`` when it does not exist, and what
  ///   `SharedDocument.read()` throws.
  static func read(_ path: String) throws -> JSONValue {
    try read(.file(path))
  }

  /// The parsed document of a file or an etcd key.
  /// - Throws: ``DocumentAddress/missing`` when it does not exist, and what
  ///   `SharedDocument.read()` throws.
  static func read(_ address: DocumentAddress) throws -> JSONValue {
    guard let value = try address.document().read() else { throw address.missing }
    return value
  }

  /// `bytes` parsed as the document of the file at `path`.
  /// - Throws: ``StorageError/invalidJSON(path:_:)`` naming `path`.
  static func parse(_ bytes: [UInt8], path: String) throws(StorageError) -> JSONValue {
    do throws(JSONParseError) {
      guard SharedDocument.syntax(forName: path) == .jwcc else { return try JSONValue(parsing: bytes) }
      if let value = try LosslessJSONDocument(parsing: bytes, syntax: .jwcc).value { return value }
      return try JSONValue(parsing: [UInt8]())
    } catch {
      throw .invalidJSON(path: path, error)
    }
  }
}

extension ContentionWait {
  /// The failure of a lock not taken within this wait: locked at once (`-n`), or a time-out
  /// (`-w SECS`) that says it timed out.
  func failure(file: String, lockPath: String, code: Int32) -> CommandFailure {
    switch self {
    case .timeout(let limit):
      return CommandFailure(code, "timed out after \(secondsText(limit)) s waiting for the lock on '\(file)', held by another process (lock file '\(lockPath)')")
    default:
      return CommandFailure(code, "'\(file)' is locked by another process (lock file '\(lockPath)')")
    }
  }

  /// The wait the `-n`/`--nonblock` and `-w`/`--wait SECS` options ask for.
  init(_ arguments: ParsedArguments) {
    if arguments.has(Help.nonblock) {
      self = .nonBlocking
    } else if let seconds = arguments.seconds(Help.wait) {
      self = seconds == .zero ? .nonBlocking : .timeout(seconds)
    } else {
      self = .forever
    }
  }
}
