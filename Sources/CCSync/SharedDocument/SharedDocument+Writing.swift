import CCSyncSystem
import CCSyncJSON

/// Writing: the exact read-modify-write of DESIGN.md's "Writing" rules, with group commit.
extension SharedDocument {
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
  ///   ``StorageError/missingFile(path:)`` under `missingFile: .fail`.
  @discardableResult
  public func update<Result>(
    wait: LockWait = .forever, invalidFile: InvalidFilePolicy = .fail,
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
  func updateTracked<Result>(
    wait: LockWait = .forever, invalidFile: InvalidFilePolicy = .fail,
    missingFile: MissingFilePolicy = .create, writes: WritePolicy = .whenChanged,
    _ body: (inout JSONValue, _ fileHeldDocument: Bool) throws -> Result
  ) throws -> (result: Result, rank: Rank?, notDurable: StorageError?) {
    try withoutActuallyEscaping(body) { escapable in
      let request = GroupCommit.Request(invalidFile: invalidFile, missingFile: missingFile, writes: writes, escapable)
      do {
        if wait == .forever {
          do {
            try groupCommit.submit(request) { batch in try self.commit(batch, wait: .forever) }
          } catch is GroupCommit.NestedSubmission {
            // Nested in an update of this document on this thread: it would wait for itself.
            throw FileLock.heldByThisThread(file.path + ".lock")
          }
        } else {
          try commit([request], wait: wait)
          try request.outcome()
        }
      } catch let error as StorageError {
        guard case .notDurable = error, let result = request.result, request.resultRank != nil else { throw error }
        return (result as! Result, request.resultRank, error)
      }
      return (request.result as! Result, request.resultRank, nil)
    }
  }

  /// Replaces the whole document with `value` under the exclusive lock (the text is `value`
  /// printed pretty, even when it equals the current document in meaning).
  /// - Throws: as ``update(wait:invalidFile:_:)``.
  public func replace(with value: JSONValue, wait: LockWait = .forever) throws {
    var retired = RetiredVersions()
    defer { withExtendedLifetime(retired) {} }
    try file.withLockedFile(exclusive: true, wait: wait) { locked throws -> Void in
      _ = try write(value, to: locked, retired: &retired)
    }
  }

  /// Runs one batch under one exclusive lock and one write.
  fileprivate func commit(_ batch: [GroupCommit.Request], wait: LockWait) throws {
    // Taken before the locked read: what a reader records after it may be older or newer.
    let generationBeforeRead = tracking.withLock { $0.generation }
    // What the commit replaces (the version recorded before, the document read) is freed
    // after the lock is released: taking a parsed document apart is work no other writer
    // needs to wait for.
    var retired = RetiredVersions()
    defer { withExtendedLifetime(retired) {} }
    try file.withLockedFile(exclusive: true, wait: wait) { locked in
      let current: CurrentVersion
      do {
        current = try readForWrite(locked, policy: batch.contains { $0.invalidFile == .fail } ? .fail : .preserveAndReplace)
      } catch {
        for request in batch { request.fail(error) }
        return
      }
      retired.document = current.document
      var document = current.document ?? .object(JSONObject())
      for request in batch {
        if current.isMissing && request.missingFile == .fail {
          request.fail(StorageError.missingFile(path: file.path))
        } else {
          request.run(on: &document, fileHeldDocument: current.document != nil)
        }
      }
      let committed = batch.filter(\.succeeded)
      guard !committed.isEmpty else { return }
      let generation: UInt64
      if let text = textToWrite(document, over: current, for: committed) {
        do {
          generation = try write(document, printedAs: text, to: locked, replacing: current.identity, retired: &retired)
        } catch {
          for request in committed { request.fail(error) }
          return
        }
      } else {
        // Nothing to write, but what is returned must be durable in durable mode.
        locked.makeReadVersionDurable()
        generation = recordUnreplaced(current, generationBeforeRead: generationBeforeRead, retired: &retired)
      }
      for (position, request) in batch.enumerated() {
        request.resultRank = Rank(generation: generation, position: position)
      }
    }
  }

  /// Ranks the version a commit read under the lock and left in place (nothing to write), so
  /// that its result takes its place among the versions this process recorded: a result
  /// ranked nowhere would be taken over a newer version the watcher recorded meanwhile, and
  /// the process would keep the older value with no event left to correct it.
  ///
  /// The version last recorded with the same bytes is this one. Otherwise, when nothing was
  /// recorded since before the read, this version is the newest known and is recorded. When
  /// another version was recorded since, it may have been read before this one or after (a
  /// writer that renamed a newer version in after the lock was released): this version then
  /// ranks before it and does not replace it. If that other version was the older one, its
  /// reader read it before the rename of this one, whose event is still to come.
  /// - Returns: the generation this version ranks under.
  fileprivate func recordUnreplaced(
    _ current: CurrentVersion, generationBeforeRead: UInt64, retired: inout RetiredVersions
  ) -> UInt64 {
    tracking.withLock { state in
      guard let bytes = current.bytes, let identity = current.identity else { return generationBeforeRead }
      if let seen = state.seen, seen.bytes.hasSameBytes(as: bytes) { return state.generation }
      guard state.generation == generationBeforeRead else { return generationBeforeRead }
      state.generation += 1
      retired.seen = state.seen
      state.seen = SeenVersion(identity: identity, bytes: bytes, document: current.document, layout: current.layout)
      return state.generation
    }
  }

  /// Values a commit drops while it holds the lock, kept until it has released it.
  fileprivate struct RetiredVersions {
    var seen: SeenVersion?
    var document: JSONValue?
  }

  /// The file as a write found it under the lock.
  fileprivate struct CurrentVersion {
    /// The parsed document; `nil` when the file is missing or was invalid (and kept aside).
    var document: JSONValue?
    /// The bytes read, `nil` when the file is missing.
    var bytes: [UInt8]?
    /// The identity of the version read, which the write replaces.
    var identity: FileIdentity?
    /// Where `document`'s top-level members lie in `bytes`, when `bytes` are the printer's
    /// text of `document` (see ``JSONDocumentLayout``).
    var layout: JSONDocumentLayout?
    var isMissing: Bool { bytes == nil }
  }

  /// The text to write for `document` with its layout, or `nil` when nothing needs writing:
  /// the document means what the file already holds and no request asked for a write when
  /// only the text differs. The text is printed once, whether it decides or not.
  fileprivate func textToWrite(
    _ document: JSONValue, over current: CurrentVersion, for requests: [GroupCommit.Request]
  ) -> PrintedVersion? {
    let printed = { SharedDocument.printedVersion(of: document, over: current) }
    guard let original = current.document, document == original else { return printed() }  // changed, created, or replacing an invalid file
    guard requests.contains(where: { $0.writes == .whenTextDiffers }) else { return nil }
    let text = printed()
    return current.bytes.map(text.bytes.hasSameBytes(as:)) == true ? nil : text
  }

  /// A document's text as a write puts it in the file, with its layout and how deep it nests
  /// arrays and objects (see ``JSONDocumentLayout/printMeasuringNesting(_:sizeHint:)``).
  fileprivate typealias PrintedVersion = (bytes: [UInt8], layout: JSONDocumentLayout?, nesting: Int)

  /// The text of `document`: printed over the version read where that version's text is the
  /// printer's (only the top-level values that changed are printed, see
  /// ``JSONDocumentLayout``), whole otherwise; the same bytes either way, those of
  /// ``documentBytes(_:)``.
  fileprivate static func printedVersion(of document: JSONValue, over current: CurrentVersion) -> PrintedVersion {
    if let layout = current.layout, let original = current.document, let bytes = current.bytes,
      let printed = layout.printMeasuringNesting(document, over: bytes, printedFrom: original)
    {
      return (printed.bytes, printed.layout, printed.nesting)
    }
    return JSONDocumentLayout.printMeasuringNesting(document, sizeHint: current.bytes?.count ?? 0)
  }

  /// Reads the file for a write, under the lock. An invalid file is kept in a corrupt copy
  /// first under `.preserveAndReplace` (an empty file has nothing to keep).
  fileprivate func readForWrite(_ locked: LockedFile, policy: InvalidFilePolicy) throws(StorageError) -> CurrentVersion {
    guard let snapshot = try locked.read() else { return CurrentVersion() }
    if let known = knownVersion(for: snapshot.bytes) {
      return CurrentVersion(document: known.document, bytes: snapshot.bytes, identity: snapshot.identity, layout: known.layout)
    }
    do {
      return CurrentVersion(document: try parse(snapshot.bytes), bytes: snapshot.bytes, identity: snapshot.identity)
    } catch {
      guard policy == .preserveAndReplace else { throw error }
      if !snapshot.bytes.isEmpty { try locked.preserveCorruptCopy(of: snapshot.bytes) }
      return CurrentVersion(document: nil, bytes: snapshot.bytes, identity: snapshot.identity)
    }
  }

  /// Writes `value` and records it as seen; returns the generation it was recorded under.
  ///
  /// The write starts by bumping the generation, so a read that began earlier (and may have
  /// read the version being replaced) looks again instead of recording it over this one. A
  /// version recorded while this write was under way is kept when it is newer (a writer that
  /// ignores the lock renamed its file over this one) and overwritten when it is `replacing`,
  /// the version this write read and replaced.
  ///
  /// A document that nests arrays and objects deeper than readers accept (the parser's
  /// default limit, 512 levels) is not written: no process could read the file afterwards.
  /// - Throws: ``StorageError/encodingFailed(path:message:)`` for such a document, and what
  ///   ``LockedFile/replaceContents(with:)`` throws.
  fileprivate func write(
    _ value: JSONValue, printedAs text: PrintedVersion? = nil, to locked: LockedFile, replacing: FileIdentity? = nil,
    retired: inout RetiredVersions
  ) throws(StorageError) -> UInt64 {
    let (bytes, layout, nesting) = text ?? JSONDocumentLayout.printMeasuringNesting(value)
    let limit = JSONParser.Options.defaultMaximumDepth
    guard nesting <= limit else {
      throw .encodingFailed(
        path: file.path,
        message: "the document would nest arrays and objects \(nesting) levels deep, deeper than the \(limit) readers accept; nothing written")
    }
    let started = tracking.withLock { state in
      state.generation += 1
      state.writing = bytes
      return state.generation
    }
    let identity: FileIdentity
    do {
      identity = try locked.replaceContents(with: bytes)
    } catch {
      tracking.withLock { $0.writing = nil }
      throw error
    }
    return tracking.withLock { state in
      state.writing = nil
      if state.generation != started, let seen = state.seen, seen.identity != identity, seen.identity != replacing {
        return started  // a newer version was recorded meanwhile: this one ranks before it
      }
      state.generation += 1
      retired.seen = state.seen
      state.seen = SeenVersion(identity: identity, bytes: bytes, document: value, layout: layout)
      return state.generation
    }
  }

}
