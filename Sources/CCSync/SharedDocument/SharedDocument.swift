import CCSyncSystem
import CCSyncJSON

/// One JSON document in a shared file, as this process last saw it: read it, change it
/// exactly under the file's lock, and tell another process's write from this process's own.
///
/// Every write takes the exclusive lock, re-reads the file under it, applies the change to
/// what the file holds now, and replaces it atomically (see ``SharedFile``), so changes made by
/// other processes in the meantime are kept. Writes print the document pretty (2-space indent,
/// trailing newline); key order and the text of every value not changed are kept.
///
/// `Sendable`: the last-seen version is guarded by a `Protected`; concurrent ``update(wait:invalidFile:_:)``
/// calls are grouped into one write by ``GroupCommit``.
public final class SharedDocument: Sendable {
  /// What to do when a write finds a file that is not valid JSON.
  public enum InvalidFilePolicy: Sendable {
    /// Leave the file untouched and throw ``StorageError/invalidJSON(path:_:)`` (the CLI's choice).
    case fail
    /// Keep the bytes in `NAME.corrupt-TIMESTAMP`, then write starting from `{}` (the library's choice).
    case preserveAndReplace
  }

  /// What an update does when the file does not exist.
  public enum MissingFilePolicy: Sendable {
    /// Start from `{}` and create the file (its directory must exist).
    case create
    /// Fail with ``StorageError/missingFile(path:)`` without running the closure.
    case fail
  }

  /// When an update writes.
  public enum WritePolicy: Sendable {
    /// When the document changed in meaning (`JSONValue` `==`), or the file is created.
    case whenChanged
    /// Whenever the printed document differs from the file's bytes (a reordering or a new
    /// number spelling is written too).
    case whenTextDiffers
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

  /// Where a version stands among those this process recorded: its generation, then, for
  /// the requests of one group-commit batch (one write), the request's position in the batch,
  /// since each request's result is the document as it stood after that request.
  struct Rank: Comparable, Sendable {
    var generation: UInt64
    var position: Int = 0

    static func < (lhs: Rank, rhs: Rank) -> Bool {
      (lhs.generation, lhs.position) < (rhs.generation, rhs.position)
    }
  }

  /// The file underneath.
  public let file: SharedFile
  let tracking = Protected(Tracking())
  let groupCommit = GroupCommit()

  /// The version of the file this process last read or wrote.
  struct SeenVersion {
    var identity: FileIdentity
    /// When this process saw that identity (wall clock): whether a later version may show it
    /// too depends on how long after the version's last change it was seen.
    var seenAt = FileSystem.currentTime()
    var bytes: [UInt8]
    /// Why this version is not a valid document, or `nil` when it is.
    var problem: StorageError? = nil
    /// The document `bytes` parse to, kept by a process that writes (from its first write on):
    /// its next write, reading these very bytes again under the lock, takes it instead of
    /// parsing them, and one reading a version that differs from them inside top-level values
    /// parses those values alone (see ``SharedDocument/knownVersion(for:)``). A process that only
    /// reads (a watcher) keeps none: it would pay its memory (about three times the file's
    /// size) for nothing.
    var document: JSONValue? = nil
    /// Where `document`'s top-level members lie in `bytes`, when `bytes` are exactly the
    /// printer's text of `document` (see ``JSONDocumentLayout``): the next write parses a
    /// version that differs in a few top-level values by those values alone.
    var layout: JSONDocumentLayout? = nil

    /// `bytes` parsed by way of this version, when it kept its document: the same bytes give
    /// that document, bytes that differ inside top-level values the parse of those values (see
    /// ``SharedDocument/knownVersion(for:)``); `nil` otherwise.
    func knownVersion(for bytes: [UInt8]) -> (document: JSONValue, layout: JSONDocumentLayout?)? {
      guard let document else { return nil }
      if self.bytes.hasSameBytes(as: bytes) { return (document, layout) }
      return layout?.parse(bytes, over: self.bytes, parsedAs: document)
    }
  }

  /// How long after a version's last change its identity may recur (see
  /// `FileIdentity.mayRecur`): until then an unchanged identity proves nothing and only the
  /// bytes tell. 2 s, the coarsest timestamp tick of common file systems.
  static let identityRecurrenceWindow: Int64 = 2_000_000_000

  /// ``identityRecurrenceWindow``, or another for tests.
  let identityRecurrenceWindow: Int64

  /// What this process knows of the file's versions. Readers (the watcher thread, `load`) and
  /// writers (any thread) record versions concurrently; the generation keeps the records in
  /// the order the versions appeared on disk.
  struct Tracking {
    /// The version last read or written.
    var seen: SeenVersion?
    /// Bumped whenever `seen` changes and when a write starts. A reader records what it read
    /// only if the generation is still the one it started from: otherwise a write of this
    /// process (or another read) happened meanwhile and what it read may be older than what
    /// is recorded, so it looks again.
    var generation: UInt64 = 0
    /// The bytes a write of this process is putting in place, from just before its rename
    /// until it records them: a reader finding exactly these bytes has found this process's
    /// own write, not another process's.
    var writing: [UInt8]?
  }

  /// Creates a document over `path`; nothing is read until asked.
  /// - Parameters:
  ///   - durable: `fsync` file and directory on every write (default).
  ///   - logger: where warnings about the file go (see ``SharedFile``).
  public convenience init(path: String, durable: Bool = true, logger: StorageLogger = .standardError) {
    self.init(file: SharedFile(path: path, durable: durable, logger: logger))
  }

  /// Creates a document over an existing ``SharedFile``.
  public convenience init(file: SharedFile) {
    self.init(file: file, identityRecurrenceWindow: SharedDocument.identityRecurrenceWindow)
  }

  /// Creates a document whose identities may recur for `identityRecurrenceWindow`
  /// nanoseconds after a version's last change (tests shorten or lengthen it).
  init(file: SharedFile, identityRecurrenceWindow: Int64) {
    self.file = file
    self.identityRecurrenceWindow = identityRecurrenceWindow
  }

  /// Reads and parses the file; `nil` when it does not exist. Records the version as seen.
  /// - Throws: ``StorageError/invalidJSON(path:_:)`` (an empty file included), or what
  ///   ``SharedFile/read()`` throws.
  public func read() throws(StorageError) -> JSONValue? {
    try readTracked().value
  }

  /// ``read()``, with the rank this version was recorded under (see
  /// ``readIfChangedTracked(contentMayDiffer:)``). A read that raced with another recording
  /// (a write of this process, or the watcher's reload of a later version) is done again, as
  /// there, so a version older than one already recorded is not recorded over it with a
  /// newer rank.
  func readTracked() throws(StorageError) -> (value: JSONValue?, rank: Rank?) {
    var attempts = 0
    while true {
      attempts += 1
      let (seen, generation) = tracking.withLock { ($0.seen, $0.generation) }
      guard let snapshot = try file.read() else { return (nil, nil) }
      let parsed = try parse(snapshot.bytes, after: seen)
      // The fourth attempt records what it read whatever happened meanwhile.
      if let recorded = remember(snapshot, parsed, ifGenerationIs: attempts < 4 ? generation : nil) {
        return (parsed.document, Rank(generation: recorded))
      }
    }
  }

  /// Checks whether the file is still the version last seen: `stat` first, and when the
  /// identity is the same and `contentMayDiffer` (an in-place write within one timestamp tick),
  /// or the version seen changed too recently for its identity to be trusted (a newer version
  /// can show the same identity within one timestamp tick), the bytes. Records what it finds
  /// as seen, valid or not, so one invalid version is reported as `.invalid` each time it is
  /// looked at closely but a mere `stat` of it is `.unchanged`. Never throws: problems are
  /// observations.
  public func readIfChanged(contentMayDiffer: Bool = false) -> Observation {
    readIfChangedTracked(contentMayDiffer: contentMayDiffer).observation
  }

  /// ``readIfChanged(contentMayDiffer:)``, with the rank a `.changed` version was recorded
  /// under. Ranks grow in the order versions are recorded, reads and writes alike, so a
  /// subscriber that also adopts its own writes' results can tell a version older than one it
  /// already took.
  ///
  /// A version of this process's own write is never reported as `.changed`, even while the
  /// write is still finishing (between its `rename` and the directory `fsync`). A read that
  /// raced with a write of this process is done again, so an older version read before the
  /// write is never recorded over it.
  func readIfChangedTracked(contentMayDiffer: Bool = false) -> (observation: Observation, rank: Rank?) {
    for attempt in 0..<4 {
      let (seen, generation) = tracking.withLock { ($0.seen, $0.generation) }
      let snapshot: FileSnapshot
      do {
        // The `stat` decides alone only when contents cannot differ under the same identity;
        // otherwise the bytes are read and compared anyway, so it would be one call for nothing.
        if !contentMayDiffer, let seen, !seen.identity.mayRecur(seenAt: seen.seenAt, window: identityRecurrenceWindow),
          let current = try file.identity(), seen.identity == current
        {
          return (.unchanged, nil)
        }
        guard let read = try file.read() else {
          let vanished = tracking.withLock { state -> Bool? in
            guard state.generation == generation || attempt == 3 else { return nil }
            if state.seen != nil { state.generation += 1 }
            state.seen = nil
            return seen != nil
          }
          guard let vanished else { continue }
          return (vanished ? .missing : .unchanged, nil)
        }
        snapshot = read
      } catch {
        return (.invalid(error), nil)
      }
      let sameBytes = seen.map { $0.bytes.hasSameBytes(as: snapshot.bytes) } ?? false
      let parsed: Result<ParsedVersion, StorageError>? =
        sameBytes ? nil : Result { () throws(StorageError) in try parse(snapshot.bytes, after: seen) }
      let outcome = tracking.withLock { state -> (Observation, Rank?)? in
        if state.writing?.hasSameBytes(as: snapshot.bytes) == true { return (.unchanged, nil) }  // our own write, finishing
        guard state.generation == generation || attempt == 3 else { return nil }
        if sameBytes, let seen {
          // On the last attempt the version recorded may have moved on since `seen` was taken:
          // the identity read belongs to the bytes read, so it is given only to a version with
          // those bytes (given to another, a later `stat` would take that version for the file).
          if state.generation == generation || state.seen?.bytes.hasSameBytes(as: snapshot.bytes) == true {
            state.seen?.identity = snapshot.identity
            state.seen?.seenAt = FileSystem.currentTime()
          }
          return (seen.problem.map { .invalid($0) } ?? .unchanged, nil)
        }
        state.generation += 1
        switch parsed {
        case .success(let version):
          state.seen = SeenVersion(
            identity: snapshot.identity, bytes: snapshot.bytes, document: version.kept, layout: version.layout)
          return (.changed(version.document), Rank(generation: state.generation))
        case .failure(let error):
          state.seen = SeenVersion(identity: snapshot.identity, bytes: snapshot.bytes, problem: error)
          return (.invalid(error), nil)
        case nil:
          return (.unchanged, nil)  // not reached: `parsed` is nil only with `sameBytes`
        }
      }
      if let outcome { return outcome }
    }
    return (.unchanged, nil)  // not reached: the last attempt always records
  }

  /// Forgets the version seen, so that the next ``readIfChanged(contentMayDiffer:)`` reports
  /// whatever the file holds.
  public func forgetSeenVersion() {
    tracking.withLock { state in
      state.seen = nil
      state.generation += 1
    }
  }

  func parse(_ bytes: [UInt8]) throws(StorageError) -> JSONValue {
    do {
      return try JSONValue(parsing: bytes)
    } catch {
      throw .invalidJSON(path: file.path, error)
    }
  }

  /// Records `snapshot` (valid, parsed as `parsed`) as seen, if the generation is still
  /// `expected` (always when `nil`); returns its generation, or `nil` when another version was
  /// recorded meanwhile.
  private func remember(_ snapshot: FileSnapshot, _ parsed: ParsedVersion, ifGenerationIs expected: UInt64?) -> UInt64? {
    tracking.withLock { state in
      if let expected, state.generation != expected { return nil }
      state.generation += 1
      state.seen = SeenVersion(identity: snapshot.identity, bytes: snapshot.bytes, document: parsed.kept, layout: parsed.layout)
      return state.generation
    }
  }

  /// A version read outside a write: its document, the document to keep with it as seen, and
  /// its layout.
  struct ParsedVersion {
    var document: JSONValue
    /// `document` when the version seen before kept its document (a process that writes:
    /// its next update then starts from this one without a parse), `nil` otherwise (a process
    /// that only reads keeps no document; see ``SeenVersion/document``).
    var kept: JSONValue?
    var layout: JSONDocumentLayout?
  }

  /// Parses a version read outside a write, by way of `seen` when that is a version this
  /// process wrote or kept (see ``knownVersion(for:)``): then only the changed top-level values
  /// are parsed, and the result is kept for the next update.
  func parse(_ bytes: [UInt8], after seen: SeenVersion?) throws(StorageError) -> ParsedVersion {
    guard let seen, seen.document != nil else { return ParsedVersion(document: try parse(bytes)) }
    if let known = seen.knownVersion(for: bytes) {
      return ParsedVersion(document: known.document, kept: known.document, layout: known.layout)
    }
    let document = try parse(bytes)
    return ParsedVersion(document: document, kept: document)
  }

  /// The document `bytes` parse to, and their layout when known, by way of the version this
  /// process last saw, when it kept that version's document (it has written the file); `nil`
  /// when it did not or the shortcut does not apply (the caller parses).
  ///
  /// - The same bytes: that version's document, without a parse. The printer's text parses
  ///   back to an equal document, so a process that is the only writer (or the last one) of
  ///   its file skips the parse its next update would repeat.
  /// - Bytes that differ from them only inside top-level values (another process changed a
  ///   setting): those values' text alone is parsed (see ``JSONDocumentLayout``).
  ///
  /// The bytes themselves are always read under the lock; only the parse is spared.
  func knownVersion(for bytes: [UInt8]) -> (document: JSONValue, layout: JSONDocumentLayout?)? {
    tracking.withLock { $0.seen }?.knownVersion(for: bytes)
  }

  /// The bytes a document is written as: pretty JSON with a trailing newline.
  public static func documentBytes(_ value: JSONValue) -> [UInt8] {
    JSONDocumentLayout.print(value).bytes
  }
}
