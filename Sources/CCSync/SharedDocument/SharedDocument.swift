import Synchronization

/// One JSON document in a shared file, as this process last saw it: read it, change it
/// exactly under the file's lock, and tell another process's write from this process's own.
///
/// Every write takes the exclusive lock, re-reads the file under it, applies the change to
/// what the file holds now, and replaces it atomically (see ``SharedFile``), so changes made by
/// other processes in the meantime are kept. Writes print the document pretty (2-space indent,
/// trailing newline); key order and the text of every value not changed are kept.
///
/// `Sendable`: the last-seen version is guarded by a `Mutex`; concurrent ``update(wait:invalidFile:_:)``
/// calls are grouped into one write by ``GroupCommit``.
public final class SharedDocument: Sendable {
  /// What to do when a write finds a file that is not valid JSON.
  public enum InvalidFilePolicy: Sendable {
    /// Leave the file untouched and throw ``StorageError/invalidJSON(path:_:)`` (the CLI's choice).
    case fail
    /// Keep the bytes in `NAME.corrupt-TIMESTAMP`, then write starting from `{}` (the library's choice).
    case preserveAndReplace
  }

  /// What ``readIfChanged(contentMayDiffer:)`` found.
  public enum Observation: Sendable {
    /// The file is the version this process last read or wrote.
    case unchanged
    /// Another version, valid JSON.
    case changed(JSONValue)
    /// The file does not exist (any more).
    case missing
    /// The file exists but is not valid JSON, or cannot be read.
    case invalid(StorageError)
  }

  /// The file underneath.
  public let file: SharedFile
  private let lastSeen = Mutex<SeenVersion?>(nil)
  private let groupCommit = GroupCommit()

  /// The version of the file this process last read or wrote.
  struct SeenVersion {
    var identity: FileIdentity
    var bytes: [UInt8]
    /// Why this version is not a valid document, or `nil` when it is.
    var problem: StorageError? = nil
  }

  /// Creates a document over `path`; nothing is read until asked.
  /// - Parameter durable: `fsync` file and directory on every write (default).
  public convenience init(path: String, durable: Bool = true) {
    self.init(file: SharedFile(path: path, durable: durable))
  }

  /// Creates a document over an existing ``SharedFile``.
  public init(file: SharedFile) {
    self.file = file
  }

  /// Reads and parses the file; `nil` when it does not exist. Records the version as seen.
  /// - Throws: ``StorageError/invalidJSON(path:_:)`` (an empty file included), or what
  ///   ``SharedFile/read()`` throws.
  public func read() throws(StorageError) -> JSONValue? {
    guard let snapshot = try file.read() else { return nil }
    let value = try parse(snapshot.bytes)
    remember(snapshot)
    return value
  }

  /// Checks whether the file is still the version last seen: `stat` first, and when the
  /// identity is the same and `contentMayDiffer` (an in-place write within one timestamp tick),
  /// the bytes. Records what it finds as seen, valid or not, so one invalid version is
  /// reported as `.invalid` each time it is looked at closely but a mere `stat` of it is
  /// `.unchanged`. Never throws: problems are observations.
  public func readIfChanged(contentMayDiffer: Bool = false) -> Observation {
    let seen = lastSeen.withLock { $0 }
    do {
      guard let identity = try file.identity() else {
        lastSeen.withLock { $0 = nil }
        return seen == nil ? .unchanged : .missing
      }
      if let seen, seen.identity == identity, !contentMayDiffer { return .unchanged }
      guard let snapshot = try file.read() else {
        lastSeen.withLock { $0 = nil }
        return .missing
      }
      if let seen, seen.bytes == snapshot.bytes {
        lastSeen.withLock { $0?.identity = snapshot.identity }
        return seen.problem.map { .invalid($0) } ?? .unchanged
      }
      do {
        let value = try parse(snapshot.bytes)
        remember(snapshot)
        return .changed(value)
      } catch {
        lastSeen.withLock { $0 = SeenVersion(identity: snapshot.identity, bytes: snapshot.bytes, problem: error) }
        return .invalid(error)
      }
    } catch {
      return .invalid(error)
    }
  }

  /// Forgets the version seen, so that the next ``readIfChanged(contentMayDiffer:)`` reports
  /// whatever the file holds.
  public func forgetSeenVersion() {
    lastSeen.withLock { $0 = nil }
  }

  /// The exact read-modify-write: takes the exclusive lock, reads the latest file, runs `body`
  /// on its JSON (`{}` when the file does not exist), writes the result if it differs (a missing
  /// file is always created), and releases the lock. N processes doing M increments each end at
  /// exactly N x M.
  ///
  /// Calls from several threads of this process that wait `.forever` are grouped into one
  /// write (group commit): each `body` sees the result of the one before. A `body` that throws
  /// has its changes discarded and its error rethrown to its caller; the others still commit.
  /// - Returns: what `body` returned.
  /// - Throws: ``StorageError/lockUnavailable(path:)`` when `wait` runs out;
  ///   ``StorageError/invalidJSON(path:_:)`` under `.fail`; write errors; what `body` throws.
  @discardableResult
  public func update<Result>(
    wait: LockWait = .forever, invalidFile: InvalidFilePolicy = .fail,
    _ body: (inout JSONValue) throws -> Result
  ) throws -> Result {
    try withoutActuallyEscaping(body) { escapable in
      let request = GroupCommit.Request(invalidFile: invalidFile, escapable)
      if wait == .forever {
        try groupCommit.submit(request) { batch in try self.commit(batch, wait: .forever) }
      } else {
        try commit([request], wait: wait)
        try request.outcome()
      }
      return request.result as! Result
    }
  }

  /// Replaces the whole document with `value` under the exclusive lock (the text is `value`
  /// printed pretty, even when it equals the current document in meaning).
  /// - Throws: as ``update(wait:invalidFile:_:)``.
  public func replace(with value: JSONValue, wait: LockWait = .forever) throws {
    try file.withLock(exclusive: true, wait: wait) {
      try write(value)
    }
  }

  /// Runs one batch under one exclusive lock and one write.
  private func commit(_ batch: [GroupCommit.Request], wait: LockWait) throws {
    try file.withLock(exclusive: true, wait: wait) {
      var document: JSONValue
      let original: JSONValue?
      do {
        original = try readForWrite(policy: batch.contains { $0.invalidFile == .fail } ? .fail : .preserveAndReplace)
        document = original ?? .object(JSONObject())
      } catch {
        for request in batch { request.fail(error) }
        return
      }
      for request in batch { request.run(on: &document) }
      guard original == nil || document != original else { return }
      do {
        try write(document)
      } catch {
        for request in batch where request.succeeded { request.fail(error) }
      }
    }
  }

  /// Reads the file for a write, under the lock. An invalid file is kept in a corrupt copy
  /// first under `.preserveAndReplace` (an empty file has nothing to keep).
  private func readForWrite(policy: InvalidFilePolicy) throws(StorageError) -> JSONValue? {
    guard let snapshot = try file.read() else { return nil }
    do {
      return try parse(snapshot.bytes)
    } catch {
      guard policy == .preserveAndReplace else { throw error }
      if !snapshot.bytes.isEmpty { try file.preserveCorruptCopy(of: snapshot.bytes) }
      return nil
    }
  }

  private func write(_ value: JSONValue) throws(StorageError) {
    let bytes = SharedDocument.documentBytes(value)
    let identity = try file.replaceContents(with: bytes)
    lastSeen.withLock { $0 = SeenVersion(identity: identity, bytes: bytes) }
  }

  private func parse(_ bytes: [UInt8]) throws(StorageError) -> JSONValue {
    do {
      return try JSONValue(parsing: bytes)
    } catch {
      throw .invalidJSON(path: file.path, error)
    }
  }

  private func remember(_ snapshot: FileSnapshot) {
    lastSeen.withLock { $0 = SeenVersion(identity: snapshot.identity, bytes: snapshot.bytes) }
  }

  /// The bytes a document is written as: pretty JSON with a trailing newline.
  static func documentBytes(_ value: JSONValue) -> [UInt8] {
    var bytes = value.formattedBytes(.pretty)
    if bytes.last != UInt8(ascii: "\n") { bytes.append(UInt8(ascii: "\n")) }
    return bytes
  }
}
