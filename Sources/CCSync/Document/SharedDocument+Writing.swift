import CCSyncSystem
import CCSyncJSON

/// Writing: the exact read-modify-write, with group commit (docs/ARCHITECTURE.md, "A save,
/// step by step").
extension SharedDocument {
  /// The exact read-modify-write: takes the exclusive lock, reads the latest file, runs `body`
  /// on its JSON (`{}` when the file does not exist), writes the result if it differs (a missing
  /// file is always created), and releases the lock. N processes doing M increments each end at
  /// exactly N x M.
  ///
  /// Calls from several threads of this process that wait `.forever` are grouped into one
  /// write (group commit): each `body` sees the result of the one before. A `body` that throws
  /// has its changes discarded and its error rethrown to its caller; the others still commit.
  ///
  /// On an etcd key the write is a compare-and-swap instead of a locked write: when another
  /// writer got in between, every `body` of the write runs again on the newer document, so a
  /// `body` may run more than once and must have no effect beyond the document.
  /// - Returns: what `body` returned.
  /// - Throws: ``StorageError/lockUnavailable(path:)`` when `wait` runs out;
  ///   ``StorageError/invalidJSON(path:_:)`` under `.fail`; write errors; what `body` throws.
  ///   ``StorageError/missingFile(path:)`` under `missingFile: .fail`.
  @discardableResult
  public func update<Result>(
    wait: ContentionWait = .forever, invalidFile: InvalidFilePolicy = .fail,
    missingFile: MissingFilePolicy = .create, writes: WritePolicy = .whenChanged,
    _ body: (inout JSONValue) throws -> Result
  ) throws -> Result {
    let tracked = try updateTracked(wait: wait, invalidFile: invalidFile, missingFile: missingFile, writes: writes) {
      document, _ in try body(&document)
    }
    if let notDurable = tracked.notDurable { throw notDurable }
    return tracked.result
  }

  /// ``update(wait:invalidFile:_:)``, with the rank of the version its result is (the one it
  /// wrote, or the one it read and left in place when there was nothing to write) and of this
  /// request's place in the batch; see ``readIfChangedTracked(contentMayDiffer:)``.
  ///
  /// A ``StorageError/notDurable(path:_:)`` is returned, not thrown, with the result: the
  /// version is in place (readers see it), only its durability is unknown, and a caller that
  /// keeps edits pending must know they were written (see ``CodableStorage``).
  ///
  /// `body` is also told whether the locked read found a document in the file: `false` when
  /// the file is missing, empty or not valid JSON (kept aside), and `body` gets `{}`; a file
  /// that holds `{}` on purpose gives `true`.
  ///
  /// `cancellation`, when set before a plan is made (under the lock, or before each
  /// compare-and-swap attempt), fails the request with `CancellationError`: nothing of it is
  /// written.
  ///
  /// `presumingLatestSeen`: the version this document last read or wrote (its follower's
  /// news included) is taken for the current one, so a key's write makes no range first (see
  /// ``StoreWriter/presumedCurrent``); a stale one costs the compare-and-swap it loses.
  func updateTracked<Result>(
    wait: ContentionWait = .forever, invalidFile: InvalidFilePolicy = .fail,
    missingFile: MissingFilePolicy = .create, writes: WritePolicy = .whenChanged,
    cancellation: CancellationFlag? = nil, presumingLatestSeen: Bool = false,
    _ body: (inout JSONValue, _ fileHeldDocument: Bool) throws -> Result
  ) throws -> (result: Result, rank: VersionTracking.Rank?, notDurable: StorageError?) {
    try withoutActuallyEscaping(body) { escapable in
      let request = GroupCommit.TypedRequest(invalidFile: invalidFile, missingFile: missingFile, writes: writes, escapable)
      request.cancellation = cancellation
      request.presumesLatestSeen = presumingLatestSeen
      do {
        if wait == .forever {
          do {
            try groupCommit.submit(request) { batch in try self.commit(batch, wait: .forever) }
          } catch is GroupCommit.NestedSubmission {
            // Nested in an update of this document on this thread: it would wait for itself.
            throw StorageError.store(self.nestedWriteError())
          }
        } else {
          try commit([request], wait: wait)
          try request.outcome()
        }
      } catch let error as StorageError {
        guard error.isNotDurable, let result = request.result, request.resultRank != nil else { throw error }
        return (result, request.resultRank, error)
      }
      guard let result = request.result else { throw StorageError.missingFile(path: name) }  // not reached: a request without a result has an error
      return (result, request.resultRank, nil)
    }
  }

  /// Replaces the whole document with `value` under the exclusive lock (the text is `value`
  /// printed pretty, even when it equals the current document in meaning).
  /// - Throws: as ``update(wait:invalidFile:_:)``.
  public func replace(with value: JSONValue, wait: ContentionWait = .forever) throws {
    let writer = DocumentCommit(document: self, generationBeforeRead: tracking.withLock { $0.generation }) { _ in
      let text = SharedDocument.printed(value)
      try SharedDocument.checkNesting(text.nesting, name: self.name)
      if self.gate.mayApply(to: value) { try self.judgeByGate(value, bytes: text.bytes) }
      return .replacement(value, text)
    }
    try runInStore(writer, wait: wait)
  }

  /// Runs one batch as one write: one lock (or one compare-and-swap) and one `fsync`.
  fileprivate func commit(_ batch: [GroupCommit.Request], wait: ContentionWait) throws {
    let policy: InvalidFilePolicy = batch.contains { $0.invalidFile == .fail } ? .fail : .preserveAndReplace
    // Taken before the read: what a reader records after it may be older or newer.
    let writer = DocumentCommit(document: self, generationBeforeRead: tracking.withLock { $0.generation }) { found in
      var current: CurrentVersion
      do {
        current = try self.currentVersion(found, policy: policy)
      } catch {
        for request in batch { request.fail(error) }
        return .abandon
      }
      var document = current.document ?? .object(JSONObject())
      for request in batch {
        if request.cancellation?.isCancelled == true {
          // Seen before anything of the request is planned: nothing of it is written.
          request.fail(CancellationError())
        } else if current.isMissing && request.missingFile == .fail {
          request.fail(StorageError.missingFile(path: self.name))
        } else {
          // Each request's result is judged on its own (see ``DocumentGate``), so a refused
          // one is undone alone and the others of the batch still commit. Keeping `before`
          // costs a reference; the copy is made only if the request changes the document.
          let before = document
          request.run(on: &document, fileHeldDocument: current.document != nil)
          guard request.succeeded, self.gate.mayApply(to: document), document != before else { continue }
          do {
            try self.judgeBySchema(document)
          } catch {
            document = before
            request.fail(error)
          }
        }
      }
      let committed = batch.filter(\.succeeded)
      guard !committed.isEmpty else { return .abandon }
      guard let text = SharedDocument.textToWrite(document, over: current, for: committed, syntax: self.syntax) else {
        return .leave(current)
      }
      do {
        try SharedDocument.checkNesting(text.nesting, name: self.name)
        // The check sees exactly the text that will be written; it judges the batch's result.
        try self.runCheck(document, bytes: text.bytes)
      } catch {
        for request in committed { request.fail(error) }
        return .abandon
      }
      current.document = nil  // freed with the writer, after the write
      return .replacement(document, text, keepsInvalidCopy: current.isInvalid)
    }
    if batch.allSatisfy(\.presumesLatestSeen) { writer.presumedCurrent = latestSeenVersion() }
    do {
      try runInStore(writer, wait: wait)
    } catch let error as StorageError where error.isNotDurable {
      // The version is in place, only its durability is unknown: the requests keep their
      // results and ranks, and learn of it (see updateTracked).
      rank(batch, writer)
      throw error
    } catch {
      for request in batch where request.error == nil { request.fail(error) }
      return
    }
    rank(batch, writer)
  }

  /// Gives each request of a batch the rank of the batch's result and its place in it.
  private func rank(_ batch: [GroupCommit.Request], _ writer: DocumentCommit) {
    guard let generation = writer.resultGeneration else { return }
    for (position, request) in batch.enumerated() {
      request.resultRank = VersionTracking.Rank(generation: generation, position: position)
    }
  }

  /// Runs `writer` in the store, reporting the store's failures as ``StorageError/store(_:)``.
  func runInStore(_ writer: DocumentCommit, wait: ContentionWait) throws {
    // What the write replaces (the version recorded before, the document read) is freed after
    // the store returns: taking a parsed document apart is work no other writer needs to wait
    // for.
    defer { withExtendedLifetime(writer) {} }
    do {
      try writeToStore(wait: wait, writer)
    } catch let error as StoreError {
      throw StorageError.store(error)
    }
  }

  /// ``runInStore(_:wait:)`` for a writer whose planner may throw anything: what is not a
  /// `StorageError` is the document's failure to be encoded.
  func runInStoreTyped(_ writer: DocumentCommit, wait: ContentionWait) throws(StorageError) {
    do {
      try runInStore(writer, wait: wait)
    } catch let error as StorageError {
      throw error
    } catch {
      throw .encodingFailed(path: name, message: "\(error)")
    }
  }
}

/// Choosing and recording a write's version.
extension SharedDocument {
  /// The document as a write found it.
  struct CurrentVersion {
    /// The parsed document; `nil` when there is none or it was invalid.
    var document: JSONValue?
    /// The version found, `nil` when the document is missing.
    var version: StoredVersion?
    /// Where `document`'s top-level members lie in the version's bytes, when known (see
    /// ``TextLayout``).
    var layout: TextLayout?
    /// Whether the version found is not valid JSON (to be kept aside before it is replaced).
    var isInvalid = false

    var isMissing: Bool { version == nil }
  }

  /// A document's text as a write puts it in the store, with its layout and how deep the text
  /// it wrote anew nests arrays and objects (see
  /// ``JSONDocumentLayout/printMeasuringNesting(_:sizeHint:)``; text kept from the version
  /// found was read within the readers' limit).
  typealias PrintedVersion = (bytes: [UInt8], layout: TextLayout?, nesting: Int)

  /// `value` printed whole, in the printer's layout (the bytes of ``documentBytes(_:)``).
  /// - Parameter sizeHint: the size of the version it replaces, if known.
  static func printed(_ value: JSONValue, sizeHint: Int = 0) -> PrintedVersion {
    let printed = JSONDocumentLayout.printMeasuringNesting(value, sizeHint: sizeHint)
    return (printed.bytes, printed.layout.map(TextLayout.printed), printed.nesting)
  }

  /// Parses the version a write found. An invalid version is refused under `.fail`
  /// (``StorageError/invalidJSON(path:_:)``) and marked to be kept aside under
  /// `.preserveAndReplace`.
  func currentVersion(_ found: StoredVersion?, policy: InvalidFilePolicy) throws(StorageError) -> CurrentVersion {
    guard let found else { return CurrentVersion() }
    // Text that holds no value (empty, blank, or only comments) and has stayed so past the
    // mid-write grace is an empty document for a writer: it starts from `{}`. One that may be
    // a writer caught between truncating and writing is invalid, as for every reader.
    if SharedDocument.holdsNoValue(found.bytes, syntax: syntax), partialWrite() != .likely {
      return CurrentVersion(document: nil, version: found)
    }
    if let known = knownVersion(for: found.bytes) {
      return CurrentVersion(document: known.document, version: found, layout: known.layout)
    }
    do {
      return CurrentVersion(document: try parse(found.bytes), version: found)
    } catch {
      guard policy == .preserveAndReplace else { throw error }
      return CurrentVersion(document: nil, version: found, isInvalid: true)
    }
  }

  /// The text to write for `document` with its layout, or `nil` when nothing needs writing:
  /// the document means what the store already holds and no request asked for a write when
  /// only the text differs. The text is printed once, whether it decides or not.
  static func textToWrite(
    _ document: JSONValue, over current: CurrentVersion, for requests: [GroupCommit.Request], syntax: JSONSyntax
  ) -> PrintedVersion? {
    // A request for the printer's text (a whole document replaced: `ccsync save`) gets it
    // whole; the others edit the text that is there (see ``printedVersion(of:over:syntax:)``).
    let wholeText = requests.contains(where: { $0.writes == .whenTextDiffers })
    let printed = { printedVersion(of: document, over: current, syntax: syntax, editingText: !wholeText) }
    guard let original = current.document, document == original else { return printed() }  // changed, created, or replacing an invalid version
    guard requests.contains(where: { $0.writes == .whenTextDiffers }) else { return nil }
    let text = printed()
    return current.version.map { text.bytes.hasSameBytes(as: $0.bytes) } == true ? nil : text
  }

  /// The text of `document`: printed over the version found where that version's text is the
  /// printer's (only the top-level values that changed are printed, see
  /// ``JSONDocumentLayout``), whole otherwise; the same bytes either way, those of
  /// ``documentBytes(_:)``.
  static func printedVersion(
    of document: JSONValue, over current: CurrentVersion, syntax: JSONSyntax, editingText: Bool = true
  ) -> PrintedVersion {
    if case .printed(let layout)? = current.layout, let original = current.document, let bytes = current.version?.bytes,
      let printed = layout.printMeasuringNesting(document, over: bytes, printedFrom: original)
    {
      return (printed.bytes, .printed(printed.layout), printed.nesting)
    }
    // Text a person (or another program) laid out: only the changed values' text is
    // rewritten, in the style of their neighbours; comments and layout stay (see
    // ``LosslessJSONDocument``). With the layout of the text found, the top-level values that
    // stay are passed over without a scan; the layout of the text written comes back.
    if editingText, let original = current.document, let bytes = current.version?.bytes, !current.isInvalid {
      var known: LosslessLayout?
      if case .edited(let layout)? = current.layout {
        // Top-level values set to scalars: their text spliced in; it nests one level deep.
        if let spliced = layout.replacingScalars(in: bytes, from: original, to: document) {
          return (spliced.bytes, .edited(spliced.layout), 1)
        }
        known = layout
      }
      let edited = LosslessJSONDocument(bytes: bytes, syntax: syntax, value: original).editedByWalk(to: document, layout: known)
      return (edited.bytes, edited.layout.map(TextLayout.edited), max(1, document.nestingDepth(changedFrom: original)))
    }
    return printed(document, sizeHint: current.version?.bytes.count ?? 0)
  }

  /// Refuses a document that nests arrays and objects deeper than readers accept (the
  /// parser's default limit, 512 levels): no process could read it afterwards.
  /// - Throws: ``StorageError/encodingFailed(path:message:)``.
  static func checkNesting(_ nesting: Int, name: @autoclosure () -> String) throws(StorageError) {
    let limit = JSONParser.Options.defaultMaximumDepth
    guard nesting <= limit else {
      throw .encodingFailed(
        path: name(),
        message: "the document would nest arrays and objects \(nesting) levels deep, deeper than the \(limit) readers accept; nothing written")
    }
  }
}

/// One write of a document through its store (see ``StoreWriter``): asks `planner` what to
/// write given the version found, and records the result in the document's
/// ``VersionTracking`` around the moment it becomes visible.
///
/// What it replaces (the version recorded before, the document found) it keeps until it is
/// released, after the store has returned, so that taking a parsed document apart is not
/// done under the lock.
final class DocumentCommit: StoreWriter {
  /// What a planner decided.
  enum Decision {
    /// Nothing of this write counts.
    case abandon
    /// The version found is the result; nothing to write.
    case leave(SharedDocument.CurrentVersion)
    /// Write `document`, printed as `text`.
    case replacement(JSONValue, SharedDocument.PrintedVersion, keepsInvalidCopy: Bool = false)
  }

  private let document: SharedDocument
  private let generationBeforeRead: UInt64
  private let planner: (StoredVersion?) throws -> Decision
  /// The version found by the last plan, and what it decided to write.
  private var found: StoredVersion?
  private var planned: (document: JSONValue, layout: TextLayout?)?
  private var started: UInt64 = 0
  private var publishing: [UInt8] = []
  /// Freed with this object: see the type's comment.
  private var retired: [Any] = []
  /// The generation the write's result ranks under, once known.
  private(set) var resultGeneration: UInt64?
  /// What the store keeps with the version (a rollback's origin).
  let note: WriteNote?
  /// The version the document last saw, when the write's caller presumes it current (see
  /// ``StoreWriter/presumedCurrent``).
  var presumedCurrent: StoredVersion?

  init(
    document: SharedDocument, generationBeforeRead: UInt64, note: WriteNote? = nil,
    planner: @escaping (StoredVersion?) throws -> Decision
  ) {
    self.document = document
    self.generationBeforeRead = generationBeforeRead
    self.note = note
    self.planner = planner
  }

  func plan(for current: StoredVersion?) throws -> WritePlan {
    found = current
    planned = nil
    switch try planner(current) {
    case .abandon:
      return .abandon
    case .leave(let version):
      planned = version.document.map { ($0, version.layout) }
      return .leave
    case .replacement(let value, let text, let keepsInvalidCopy):
      planned = (value, text.layout)
      return .replace(with: text.bytes, keepsInvalidCopy: keepsInvalidCopy)
    }
  }

  func willPublish(_ bytes: [UInt8]) {
    publishing = bytes
    started = document.tracking.withLock { $0.beginWrite(bytes) }
  }

  func didPublish(_ identity: VersionIdentity) {
    guard let planned else { return }
    let (generation, retiredVersion) = document.tracking.withLock {
      $0.finishWrite(
        publishing, identity: identity, document: planned.document, layout: planned.layout, replacing: found,
        started: started)
    }
    resultGeneration = generation
    retired.append(retiredVersion as Any)
  }

  func didNotPublish() {
    document.tracking.withLock { $0.abandonWrite() }
  }

  func didLeave(_ current: StoredVersion?) {
    let (generation, retiredVersion) = document.tracking.withLock {
      $0.recordLeft(
        current, document: planned?.document, layout: planned?.layout, generationBeforeRead: generationBeforeRead)
    }
    resultGeneration = generation
    retired.append(retiredVersion as Any)
  }
}
