import CCSyncSystem
import CCSyncJSON

/// One JSON document in a shared file, as this process last saw it: read it, change it
/// exactly under the file's lock, and tell another process's write from this process's own.
///
/// Every write takes the exclusive lock, re-reads the file under it, applies the change to
/// what the file holds now, and replaces it atomically (see ``SharedFile``), so changes made by
/// other processes in the meantime are kept. A write edits the text it replaces: every byte
/// the change does not touch stays (layout, comments, escapes, number text, order; see
/// ``LosslessJSONDocument``); a new document is printed pretty (2-space indent, trailing
/// newline). Every version passes the document's ``gate`` before it is written or adopted.
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

  /// The store underneath: a file, an etcd key. Private: the document layer alone works
  /// through the seam (the calls the rest of the layer makes are at the end of this file),
  /// and every reader of changes follows the document through ``follow(followsSchema:everyVersion:_:)``.
  private let store: any DocumentStore
  /// What a version must pass to be written or adopted (see ``DocumentGate``).
  public let gate: DocumentGate
  /// The grammar the document's text is read with: JWCC (comments, trailing commas) for a
  /// name ending in `.jsonc` or `.hujson`, or with `CCSYNC_JSONC=1`; strict RFC 8259 JSON
  /// otherwise (a comment is then an error naming how to read the file as JWCC).
  public let syntax: JSONSyntax
  let tracking = Protected(VersionTracking())
  let groupCommit = GroupCommit()

  /// What messages name: the file's path as given.
  public var name: String { store.name }

  /// Creates a document over `path`; nothing is read until asked.
  /// - Parameters:
  ///   - durable: `fsync` file and directory on every write (default).
  ///   - logger: where warnings about the file go (see ``SharedFile``).
  ///   - gate: what a version must pass to be written or adopted; by default the schema its
  ///     `$schema` names, if any.
  ///   - syntax: the grammar of the text; by default from the name (see ``syntax``).
  public convenience init(
    path: String, durable: Bool = true, logger: DiagnosticLog = .standardError, gate: DocumentGate = .standard,
    syntax: JSONSyntax? = nil
  ) {
    self.init(store: FileStore(file: SharedFile(path: path, durable: durable, logger: logger)), gate: gate, syntax: syntax)
  }

  /// Creates a document over `path` whose changes `watcher` tells (`ccsync watch --poll`).
  package convenience init(path: String, gate: DocumentGate, watcher: FileWatcher) {
    self.init(store: FileStore(file: SharedFile(path: path), watcher: watcher), gate: gate)
  }

  /// Creates a document over an existing ``SharedFile``.
  public convenience init(file: SharedFile, gate: DocumentGate = .standard) {
    self.init(store: FileStore(file: file), gate: gate)
  }

  /// Creates a document over a key of an etcd cluster; nothing is read until asked.
  /// - Parameters:
  ///   - logger: where the watch's warnings go (the cluster unreachable, then back).
  ///   - gate: what a version must pass to be written or adopted.
  public convenience init(
    etcd location: EtcdLocation, logger: DiagnosticLog = .standardError, gate: DocumentGate = .standard, syntax: JSONSyntax? = nil
  ) {
    self.init(store: EtcdStore(location: location, logger: logger), gate: gate, syntax: syntax)
  }

  /// Creates a document whose file identities may recur for `identityRecurrenceWindow`
  /// nanoseconds after a version's last change (tests shorten or lengthen it).
  convenience init(file: SharedFile, identityRecurrenceWindow: Int64) {
    self.init(store: FileStore(file: file, identityRecurrenceWindow: identityRecurrenceWindow))
  }

  /// Creates a document over `store`.
  init(store: any DocumentStore, gate: DocumentGate = .standard, syntax: JSONSyntax? = nil) {
    self.store = store
    self.gate = gate
    self.syntax = syntax ?? SharedDocument.syntax(forName: store.name)
  }

  /// The syntax a document named `name` is read with (see ``syntax``).
  public static func syntax(forName name: String) -> JSONSyntax {
    if name.hasSuffix(".jsonc") || name.hasSuffix(".hujson") || Environment.value("CCSYNC_JSONC") == "1" { return .jwcc }
    return .strict
  }

  /// Whether `bytes` hold no value: empty, blank, or (JWCC) only comments. A scan to the
  /// first byte of a value, not a parse: a write then parses the text once.
  static func holdsNoValue(_ bytes: [UInt8], syntax: JSONSyntax) -> Bool {
    if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) { return true }
    return syntax == .jwcc && LosslessJSONDocument.holdsNoValue(bytes, syntax: .jwcc)
  }

  /// Judges a version another process wrote: a valid parse that the gate refuses becomes
  /// the refusal, so the version is recorded as a problem and never reported as changed.
  func judged(_ parsed: Result<VersionTracking.ParsedVersion, StorageError>?, bytes: [UInt8]) -> Result<VersionTracking.ParsedVersion, StorageError>? {
    guard case .success(let version)? = parsed else { return parsed }
    do {
      try gate.judge(version.document, bytes: bytes, in: store)
      return parsed
    } catch {
      return .failure(error)
    }
  }

  /// Reads and parses the document; `nil` when it does not exist. Records the version as seen.
  /// - Throws: ``StorageError/invalidJSON(path:_:)`` (an empty file included), or what the
  ///   store's read throws.
  public func read() throws(StorageError) -> JSONValue? {
    try readTracked().value
  }

  /// ``read()``, with the rank this version was recorded under (see
  /// ``readIfChangedTracked(contentMayDiffer:)``) and its identity (`nil`: none). A read that raced with another recording
  /// (a write of this process, or a reload of a later version) is done again (see
  /// ``RacingReadPolicy``), so a version older than one already recorded is not recorded over
  /// it with a newer rank.
  func readTracked() throws(StorageError) -> (value: JSONValue?, rank: VersionTracking.Rank?, identity: VersionIdentity?) {
    try RacingReadPolicy.run(fallback: (nil, nil, nil)) {
      isLastAttempt throws(StorageError) -> (JSONValue?, VersionTracking.Rank?, VersionIdentity?)? in
      let start = tracking.withLock { $0.readStart }
      guard let version = try storeCall({ () throws(StoreError) in try store.read() }) else { return (nil, nil, nil) }
      let parsed: VersionTracking.ParsedVersion
      do throws(StorageError) {
        parsed = try parse(version.bytes, after: start.seen)
      } catch {
        // Recorded as a problem, as a follower's look records it: what is reported of it
        // is then reported once, whoever reads it first (see ``isFirstReport(of:)``).
        let sameBytes = start.seen.map { $0.bytes.hasSameBytes(as: version.bytes) } ?? false
        guard tracking.withLock({
          $0.observe(version, sameBytes: sameBytes, parsed: .failure(error), since: start, isLastAttempt: isLastAttempt)
        }) != nil else { return nil }
        throw error
      }
      guard let rank = tracking.withLock({ $0.recordRead(version, parsed, since: start, isLastAttempt: isLastAttempt) })
      else { return nil }
      return (parsed.document, rank, version.identity)
    }
  }

  /// Checks whether the store still holds the version last seen: an identity check first,
  /// and the bytes when `contentMayDiffer` (an in-place write within one timestamp tick) or
  /// when the identity check cannot vouch for it (see ``DocumentStore/provesUnchanged(_:)``).
  /// Records what it finds as seen, valid or not, so one invalid version is reported as
  /// `.invalid` each time it is looked at closely but a mere identity check of it is
  /// `.unchanged`. Never throws: problems are observations.
  public func readIfChanged(contentMayDiffer: Bool = false) -> Observation {
    readIfChangedTracked(contentMayDiffer: contentMayDiffer).observation
  }

  /// ``readIfChanged(contentMayDiffer:)``, with the rank a `.changed` version was recorded
  /// under. Ranks grow in the order versions are recorded, reads and writes alike, so a
  /// subscriber that also adopts its own writes' results can tell a version older than one it
  /// already took (docs/ARCHITECTURE.md, "Versions and ranks").
  ///
  /// A version of this process's own write is never reported as `.changed`, even while the
  /// write is still finishing. A read that raced with a write of this process is done again
  /// (see ``RacingReadPolicy``), so an older version read before the write is never recorded
  /// over it.
  ///
  /// `current`, when the store's news of the change came with the version (an etcd watch
  /// event), is taken instead of reading, on every attempt. News whose order (a revision) is
  /// below the version recorded is stale (`.unchanged`): this process wrote after the change
  /// it tells of, before it was handed on.
  func readIfChangedTracked(
    contentMayDiffer: Bool = false, current news: ChangeHint.CurrentVersion? = nil
  ) -> (observation: Observation, rank: VersionTracking.Rank?) {
    let newsOrder = news?.order
    return RacingReadPolicy.run(fallback: (.unchanged, nil)) { isLastAttempt -> (Observation, VersionTracking.Rank?)? in
      let start = tracking.withLock { $0.readStart }
      // Stale news: the news of what followed is still to come, and taken, this would move the
      // value back. A retry after a race with this process's own write judges the same news
      // against that write: stale now, or the same revision (the same version), or newer. It
      // reads no more than the first attempt did (a read that, with the store unreachable,
      // would report an error for nothing).
      if let newsOrder, let order = start.seen?.identity.order, newsOrder < order { return (.unchanged, nil) }
      let version: StoredVersion
      do throws(StoreError) {
        // The identity check decides alone only when contents cannot differ under the same
        // identity; otherwise the bytes are read and compared anyway.
        if news == nil, !contentMayDiffer, let seen = start.seen, try store.provesUnchanged(seen.identity) {
          return (.unchanged, nil)
        }
        let found: StoredVersion?
        switch news {
        case .version(let carried)?:
          found = carried
        case .missing?:
          found = start.seen == nil ? nil : try store.read()  // look: a put may have followed
        case nil:
          found = try store.read()
        }
        guard let read = found else {
          guard let observation = tracking.withLock({ $0.observeMissing(since: start, isLastAttempt: isLastAttempt) })
          else { return nil }
          return (observation, nil)
        }
        version = read
      } catch {
        return (.invalid(.store(error)), nil)
      }
      let sameBytes = start.seen.map { $0.bytes.hasSameBytes(as: version.bytes) } ?? false
      let parsed: Result<VersionTracking.ParsedVersion, StorageError>? =
        sameBytes ? nil : judged(Result { () throws(StorageError) in try parse(version.bytes, after: start.seen) }, bytes: version.bytes)
      return tracking.withLock {
        $0.observe(version, sameBytes: sameBytes, parsed: parsed, since: start, isLastAttempt: isLastAttempt)
      }
    }
  }

  /// Starts the store's watch (see ``DocumentStore/watch(_:)``): for ``DocumentFollower``,
  /// the one subscriber of a document's changes.
  func watchStore(_ handler: @escaping @Sendable (ChangeHint) -> Void) -> any StoreWatch {
    store.watch(handler)
  }

  /// The store of the schema that judges `json` (see ``DocumentGate/schemaStore(for:in:)``);
  /// `nil` when none applies or it cannot be resolved.
  func schemaStore(for json: JSONValue) -> (any DocumentStore)? {
    try? gate.schemaStore(for: json, in: store)
  }

  /// What the invalid version just read may be (see ``DocumentStore/partialWrite()``).
  func partialWrite() -> PartialWrite {
    store.partialWrite()
  }

  /// Whether `rank` is that of the version recorded last, with no write started since: the
  /// version it ranks is the latest this process knows of.
  func isLatestRecorded(_ rank: VersionTracking.Rank) -> Bool {
    tracking.withLock { $0.generation == rank.generation }
  }

  /// Whether the document exists, whatever its text (an etcd lock's key holds none): the
  /// version is recorded as seen, valid or not, so a follower then reports its deletion as
  /// `.missing`.
  /// - Throws: what the store's read throws.
  package func exists() throws(StoreError) -> Bool {
    switch readIfChangedTracked(contentMayDiffer: true).observation {
    case .invalid(.store(let error)): throw error
    case .changed, .invalid: return true
    case .missing: return false
    case .unchanged: return tracking.withLock { $0.seen != nil }
    }
  }

  /// Whether `problem`, found in the version recorded last (read or looked at, refused or
  /// invalid), is to be reported: the first time it is found for that version, whoever
  /// finds it (a follower's look, a subscriber's first read). Marks it reported. A problem
  /// is reported once per version and reason (docs/SEMANTICS.md, "The gate").
  package func isFirstReport(of problem: StorageError) -> Bool {
    tracking.withLock { $0.marksReported(problem.description) }
  }

  /// Forgets the version seen, so that the next ``readIfChanged(contentMayDiffer:)`` reports
  /// whatever the store holds.
  public func forgetSeenVersion() {
    tracking.withLock { $0.forget() }
  }

  func parse(_ bytes: [UInt8]) throws(StorageError) -> JSONValue {
    do throws(JSONParseError) {
      guard syntax == .jwcc else { return try JSONValue(parsing: bytes) }
      // Only comments is no value: the same error as empty text.
      if let value = try LosslessJSONDocument(parsing: bytes, syntax: .jwcc).value { return value }
      return try JSONValue(parsing: [UInt8]())
    } catch {
      throw .invalidJSON(path: name, error)
    }
  }

  /// Parses a version read outside a write, by way of `seen` when that is a version this
  /// process wrote or kept (see ``VersionTracking/SeenVersion/knownVersion(for:)``): then only
  /// the changed top-level values are parsed, and the result is kept for the next update.
  func parse(_ bytes: [UInt8], after seen: VersionTracking.SeenVersion?) throws(StorageError) -> VersionTracking.ParsedVersion {
    guard let seen, seen.document != nil else { return VersionTracking.ParsedVersion(document: try parse(bytes)) }
    if let known = seen.knownVersion(for: bytes, syntax: syntax) {
      return VersionTracking.ParsedVersion(document: known.document, kept: known.document, layout: known.layout)
    }
    let document = try parse(bytes)
    return VersionTracking.ParsedVersion(document: document, kept: document)
  }

  /// The document `bytes` parse to, and their layout when known, by way of the version this
  /// process last saw, when it kept that version's document (it has written): `nil` when it
  /// did not or the shortcut does not apply (the caller parses).
  ///
  /// - The same bytes: that version's document, without a parse. The printer's text parses
  ///   back to an equal document, so a process that is the only writer (or the last one) of
  ///   its document skips the parse its next update would repeat.
  /// - Bytes that differ from them only inside top-level values (another process changed a
  ///   setting): those values' text alone is parsed (see ``TextLayout``), whether the text
  ///   is the printer's or laid out by a person or another program.
  ///
  /// The bytes themselves are always read under the lock; only the parse is spared.
  func knownVersion(for bytes: [UInt8]) -> (document: JSONValue, layout: TextLayout?)? {
    tracking.withLock { $0.seen }?.knownVersion(for: bytes, syntax: syntax)
  }

  /// The bytes a document is written as: pretty JSON with a trailing newline.
  public static func documentBytes(_ value: JSONValue) -> [UInt8] {
    JSONDocumentLayout.print(value).bytes
  }
}


/// The seam, as the rest of the document layer (writing, history, the gate) calls it.
extension SharedDocument {
  /// Judges `value`, whose text is `bytes`, as a version of this document (``DocumentGate/judge(_:bytes:in:)``).
  func judgeByGate(_ value: JSONValue, bytes: @autoclosure () -> [UInt8]) throws(StorageError) {
    try gate.judge(value, bytes: bytes(), in: store)
  }

  /// Judges `value` by the schema alone (``DocumentGate/judgeBySchema(_:in:)``).
  func judgeBySchema(_ value: JSONValue) throws(StorageError) {
    try gate.judgeBySchema(value, in: store)
  }

  /// Runs the gate's check on `value`, whose text is `bytes` (``DocumentGate/runCheck(_:bytes:in:)``).
  func runCheck(_ value: JSONValue, bytes: [UInt8]) throws(StorageError) {
    try gate.runCheck(value, bytes: bytes, in: store)
  }

  /// Writes one version through the store (``DocumentStore/write(wait:_:)``).
  func writeToStore(wait: ContentionWait, _ writer: some StoreWriter) throws {
    try store.write(wait: wait, writer)
  }

  /// The error for a write asked for by a thread that is already writing this document (an
  /// update nested in an update's closure), which would wait for itself for ever: `EDEADLK`,
  /// whatever the store (a file's lock or a key's compare-and-swap alike).
  func nestedWriteError() -> StoreError {
    .system(SystemError(
      code: ErrorNumber.wouldDeadlock.rawValue, operation: "update (nested in an update of the same document on this thread)",
      path: name))
  }

  /// Whether a write may block its thread waiting for another writer (a file's lock); a
  /// key's writes never do (``DocumentStore/writesWaitForOtherWriters``).
  var writesWaitForOtherWriters: Bool {
    store.writesWaitForOtherWriters
  }

  /// What one slice of an interruptible write (``ContentionWait/inSlices(checking:_:)``) may
  /// wait, of a write given `wait`: until `sliceEnd` when writes wait for other writers (or
  /// not at all, for `.nonBlocking`); otherwise `wait` itself, which bounds a key's calls
  /// and is no wait for another writer to cut into slices.
  func wait(_ wait: ContentionWait, inSliceEndingAt sliceEnd: ContinuousClock.Instant) -> ContentionWait {
    guard writesWaitForOtherWriters else { return wait }
    return wait == .nonBlocking ? .nonBlocking : .until(sliceEnd)
  }

  /// The versions the store keeps (``DocumentStore/versions(limit:)``).
  func storedVersions(limit: Int?) throws(StoreError) -> [DocumentVersion] {
    try store.versions(limit: limit)
  }

  /// The bytes of a version kept (``DocumentStore/contents(ofVersion:)``).
  func storedContents(ofVersion id: String) throws(StoreError) -> [UInt8]? {
    try store.contents(ofVersion: id)
  }

  /// Sets how many versions the store keeps (``DocumentStore/setHistoryLimit(_:)``).
  func setStoredHistoryLimit(_ count: Int) throws(StoreError) {
    try store.setHistoryLimit(count)
  }

  /// The current version's bytes as stored, valid or not, without recording it as seen;
  /// `nil` when there is none (`ccsync edit` hands them to an editor as they are).
  package func readBytes() throws(StorageError) -> [UInt8]? {
    try storeCall { () throws(StoreError) in try store.read()?.bytes }
  }
}

extension SharedDocument {
  /// Leaves the parsed version this document keeps (see ``VersionTracking/SeenVersion``) to
  /// the process's exit: a command that exits right after its write need not take apart,
  /// node by node, a tree of about three times the file's size (a tenth of a `set` on 1 MB).
  /// Only for a process about to exit: the memory stays taken.
  package func leaveKeptVersionToExit() {
    guard let document = tracking.withLock({ $0.seen?.document }) else { return }
    _ = Unmanaged.passRetained(KeptUntilExit(document))
  }

  /// The identity of the version last read or written (valid or not); `nil` when none was.
  var lastSeenIdentity: VersionIdentity? {
    tracking.withLock { $0.seen?.identity }
  }

  /// The version last read or written (its follower's news included), when it was a valid
  /// document; `nil` when none was, or it was not.
  func latestSeenVersion() -> StoredVersion? {
    latestSeen()?.version
  }

  /// ``latestSeenVersion()``'s document, parsed unless this process kept it.
  func latestSeenDocument() -> (value: JSONValue, identity: VersionIdentity)? {
    guard let (kept, version) = latestSeen() else { return nil }
    if let kept { return (kept, version.identity) }
    return (try? parse(version.bytes)).map { ($0, version.identity) }
  }

  /// The valid version last seen, and its document when this process kept it.
  private func latestSeen() -> (document: JSONValue?, version: StoredVersion)? {
    tracking.withLock { state in
      guard let seen = state.seen, seen.problem == nil else { return nil }
      return (seen.document, StoredVersion(bytes: seen.bytes, identity: seen.identity))
    }
  }

  /// The etcd revision of the version last read or written, when the store is a key.
  package var lastSeenRevision: Int64? {
    tracking.withLock { $0.seen?.identity.order }
  }
}

/// A parsed version left to the process's exit (see
/// ``SharedDocument/leaveKeptVersionToExit()``). Never shared between threads.
private final class KeptUntilExit {
  let document: JSONValue

  init(_ document: JSONValue) {
    self.document = document
  }
}
