import CCSyncSystem
import CCSyncJSON

/// Reading, writing and merging (docs/ARCHITECTURE.md, "A save, step by step" and "Merging").
extension CodableStorage {
  /// Writes this process's pending changes now (the field-level change set, applied to the
  /// file's current JSON under the exclusive lock). Without pending changes it writes nothing,
  /// except that a missing file is created with the current value.
  /// - Throws: ``StorageError``; the changes stay pending and are retried per the update mode,
  ///   except after ``StoreError/notDurable(path:_:)``: they were written (the version is in
  ///   place, its durability unknown) and are no longer pending.
  public func save() throws(StorageError) {
    let outcome: WriteOutcome
    do {
      outcome = try inSequence { try saveNow() }
    } catch {
      let storageError = CodableStorage.storageError(error, path: path)
      report(storageError)
      throw storageError
    }
    try finish(outcome)
  }

  /// Writes pending changes for an exit, taking the lock within `wait`; returns `false` when
  /// the lock was not free in time (nothing written, nothing reported: the caller tries again
  /// waiting), `true` otherwise: written, nothing pending, or failed (reported).
  func flushForExit(wait: ContentionWait) -> Bool {
    guard hasPendingChanges else { return true }
    let outcome: WriteOutcome
    do {
      outcome = try inSequence { try saveNow(wait: wait) }
    } catch StorageError.store(.lockUnavailable) where wait != .forever {
      return false
    } catch {
      report(CodableStorage.storageError(error, path: path))
      return true
    }
    try? finish(outcome)  // reported there
    return true
  }

  /// ``save()``, in the write sequence; returns what is left to do out of it. `cancellation`:
  /// see ``SharedDocument/updateTracked(wait:invalidFile:missingFile:writes:cancellation:_:)``.
  func saveNow(wait: ContentionWait = .forever, cancellation: CancellationFlag? = nil) throws -> WriteOutcome {
    let (changes, saved, seed) = try startWrite()
    let (written, rank, notDurable) = try document.updateTracked(
      wait: wait, invalidFile: .preserveAndReplace, cancellation: cancellation
    ) {
      document, fileHeldDocument -> JSONValue in
      document = CodableStorage.applying(changes, seed: seed, to: document, fileHeldDocument: fileHeldDocument)
      return document
    }
    var outcome = didWrite(written, saved: saved, rank: rank, origin: .external)
    outcome.notDurable = notDurable
    return outcome
  }

  /// What a save or update that wrote leaves for after the write sequence: observers and
  /// error handlers are called out of it, since one that waits for another thread saving this
  /// storage would otherwise wait for ever.
  struct WriteOutcome {
    /// The change observers are to hear.
    var delivery: ObserverDelivery?
    /// Why the version written could not be taken as the value (a member the type cannot
    /// decode): reported; the write itself succeeded and its edits are no longer pending.
    var unreadable: StorageError?
    /// The directory `fsync` after the rename failed: the version is in place and its edits
    /// are no longer pending, but its durability is unknown; reported and thrown.
    var notDurable: StorageError?
  }

  /// Tells observers and reports errors, out of the write sequence.
  /// - Throws: the outcome's ``WriteOutcome/notDurable``.
  func finish(_ outcome: WriteOutcome) throws(StorageError) {
    if let delivery = outcome.delivery { observers.deliver(delivery) }
    if let unreadable = outcome.unreadable { report(unreadable) }
    if let notDurable = outcome.notDurable {
      report(notDurable)
      throw notDurable
    }
  }

  /// Writes pending changes if there are any (and nothing otherwise); the call to make before
  /// handing the file to someone else, and what exit and deinit do.
  /// - Throws: ``StorageError`` when the write fails.
  public func flush() throws(StorageError) {
    guard hasPendingChanges else { return }
    try save()
  }

  /// Reads the file now, replacing the value in memory by the file's (with this process's
  /// pending changes applied on top, so nothing unsaved is lost).
  /// - Throws: ``StorageError/invalidJSON(path:_:)`` or ``StorageError/decodingFailed(path:message:)``
  ///   (the value in memory is then kept), or I/O errors.
  public func load() throws(StorageError) {
    try readAndAdopt(atStart: false)
  }

  /// The exact read-modify-write: takes the file's exclusive lock, reads the latest file, applies
  /// this process's pending changes, runs `body` on the decoded value, writes the result, and
  /// releases the lock. N processes doing M increments each end at exactly N x M. Calls from
  /// several threads run one after another, each seeing the result of the one before (see
  /// ``inSequence(_:)``).
  ///
  /// On an etcd key there is no lock: the write is a compare-and-swap, and when another
  /// writer got in between, `body` runs again on the newer value. So `body` may run more than
  /// once and must have no effect beyond the value it is given; the result returned is the
  /// last run's (docs/SEMANTICS.md, "etcd keys: beyond one machine").
  /// - Returns: what `body` returns.
  /// - Throws: ``StorageError`` (nothing is written, except after
  ///   ``StoreError/outcomeUnknown(_:)``: then it may have been), or what `body` throws (its
  ///   changes are discarded).
  @discardableResult
  public func update<Result>(_ body: (inout Value) throws -> Result) throws -> Result {
    let (result, outcome): (Result, WriteOutcome)
    do {
      (result, outcome) = try inSequence { try updateNow(body) }
    } catch let error as StorageError {
      report(error)
      throw error
    } catch let error as EncodingError {
      let storageError = StorageError.encodingFailed(path: path, message: "\(error)")
      report(storageError)
      throw storageError
    }
    try finish(outcome)  // out of the write sequence, as in `save()`
    return result
  }

  /// ``update(_:)``, in the write sequence; returns `body`'s result and what is left to do
  /// out of it. `wait` and `cancellation`: as for ``saveNow(wait:cancellation:)``.
  func updateNow<Result>(
    wait: ContentionWait = .forever, cancellation: CancellationFlag? = nil, _ body: (inout Value) throws -> Result
  ) throws -> (Result, WriteOutcome) {
    let (changes, saved, seed) = try startWrite()
    let ((written, result), rank, notDurable) = try document.updateTracked(
      wait: wait, invalidFile: .preserveAndReplace, cancellation: cancellation
    ) {
      document, fileHeldDocument -> (JSONValue, Result) in
      document = CodableStorage.applying(changes, seed: seed, to: document, fileHeldDocument: fileHeldDocument)
      var value = try coding.decode(document)
      let before = try coding.encode(value)
      let result = try body(&value)
      let after = try coding.encode(value)
      document = JSONChangeSet(from: before, to: after).applied(to: document)
      return (document, result)
    }
    var outcome = didWrite(written, saved: saved, rank: rank, origin: .local)
    outcome.notDurable = notDurable
    return (result, outcome)
  }

  /// What a save or update takes when it starts (see ``StorageState/startWrite(_:)``).
  func startWrite() throws(StorageError) -> (changes: JSONChangeSet, saved: StorageState<Value>.SavedEdits, seed: JSONValue) {
    try state.withLock { state throws(StorageError) in try state.startWrite(coding) }
  }

  /// Runs a save or update after any other of this storage's has finished, written and taken
  /// its result. Each takes the pending change set when it starts; one that took it while
  /// another save of the same change set was under way would apply it again after that save,
  /// over a version another process wrote in between: an older edit of this process put back
  /// over a newer one of that process. Reentrant. Observers and error
  /// handlers are called after it ends, so they may wait for another thread that saves.
  func inSequence<Result>(_ body: () throws -> Result) rethrows -> Result {
    try writeSequence.withLock { () throws -> Result in try body() }
  }

  /// Reads the file at initialisation: its JSON (over the default's) becomes the value.
  func loadAtStart() {
    try? readAndAdopt(atStart: true)  // a failure is recorded and reported there
  }

  /// Reads the file and takes its JSON as the synced version (pending changes on top). A
  /// missing file is noted; an invalid or undecodable one is recorded, reported and thrown.
  /// A store that cannot be asked is reported and thrown (``fileState`` as
  /// `StorageState.readFailed(_:atStart:)` says). Observers are told of a change unless
  /// `atStart`.
  private func readAndAdopt(atStart: Bool) throws(StorageError) {
    do throws(StorageError) {
      let (json, rank, _) = try document.readTracked()
      guard let json else {
        state.withLock { $0.fileState = .missing }
        return
      }
      // A version the gate refuses is not adopted, at the start as later: the value stays.
      if document.gateApplies(to: json) { try document.judge(json) }
      let (delivery, failure) = adopt(json, origin: .external, saved: nil, rank: rank, notify: !atStart)
      if let failure { throw failure }
      follower.withLock { $0 }?.followSchema(of: json)
      if let delivery { observers.deliver(delivery) }
    } catch {
      state.withLock { $0.readFailed(error, atStart: atStart) }
      // Said once per version, whoever finds it first: this read or the follower's look.
      if document.isFirstReport(of: error) { report(error) }
      throw error
    }
  }

  /// The document a write of this process's pending `changes` makes of the file's `document`.
  /// A file that holds no document (`fileHeldDocument` false: missing, zero bytes, or not
  /// valid JSON, a torn foreign write kept aside in a corrupt copy before this write replaces
  /// it) gets the whole synced value `seed`, not only the changed fields. A file that holds
  /// `{}` or `null` on purpose is changed like any other. A `null` seed (a `String?` that is
  /// `nil`) is written as `null`, not as the `{}` the file reads as when it holds nothing,
  /// which that type could not decode.
  static func applying(
    _ changes: JSONChangeSet, seed: JSONValue, to document: JSONValue, fileHeldDocument: Bool
  ) -> JSONValue {
    let base = !fileHeldDocument && isEmptyDocument(document) ? seed : document
    return changes.applied(to: base)
  }

  /// Takes a write's result (`written`, recorded under `rank`) and tells the scheduler,
  /// which schedules another write for local changes made while this one ran. `origin`:
  /// what observers hear the result as if it changed the value: `.external` for a save,
  /// whose own edits they heard when they were made, so the value can only move by other
  /// processes' fields; `.local` for an update, whose change they hear now.
  /// Returns what the caller is to do out of the write sequence (``finish(_:)``).
  private func didWrite(
    _ written: JSONValue, saved: StorageState<Value>.SavedEdits, rank: VersionTracking.Rank?, origin: ChangeOrigin
  ) -> WriteOutcome {
    let (delivery, unreadable) = adopt(written, origin: origin, saved: saved, rank: rank)
    let checkedAt = ContinuousClock.now
    scheduler.withLock { $0 }?.didSave(stillPending: hasPendingChanges, checkedAt: checkedAt)
    return WriteOutcome(delivery: delivery, unreadable: unreadable)
  }

  /// A local change: keep it encoded, tell observers, schedule the write.
  func localValueChanged() {
    if updateMode == .immediate {
      if (try? save()) == nil { scheduler.withLock { $0 }?.didFail() }
    } else {
      scheduler.withLock { $0 }?.valueChanged()
    }
  }

  /// Takes `newValue` as a local change. `base`, when given, is the encoded value the edit
  /// started from: if the value moved on since, the edit's own field-level changes are
  /// applied to the current value instead of `newValue` replacing it (see ``wrappedValue``).
  func setValue(_ newValue: Value, editedFrom base: JSONValue? = nil) {
    let changed: Bool
    let delivery: ObserverDelivery?
    do {
      let encoded = try coding.encode(newValue)
      (changed, delivery) = try state.withLock { state throws(StorageError) in
        let changed = try state.edit(to: newValue, encoded: encoded, from: base, coding)
        return (changed, changed ? observers.enqueue(value: state.value, origin: .local) : nil)
      }
    } catch {
      report(error)
      return
    }
    guard changed else { return }
    if let delivery { observers.deliver(delivery) }
    localValueChanged()
  }

  /// The scheduler's write: reports instead of throwing; `true` when it succeeded or found
  /// nothing pending.
  func automaticSave() -> Bool {
    let checkedAt = ContinuousClock.now
    guard hasPendingChanges else {
      scheduler.withLock { $0 }?.didSave(stillPending: false, checkedAt: checkedAt)
      return true
    }
    return (try? save()) != nil
  }

  static func isEmptyDocument(_ value: JSONValue) -> Bool {
    if case .object(let object) = value { return object.isEmpty }
    return value == .null
  }

  static func storageError(_ error: any Error, path: String) -> StorageError {
    if let error = error as? StorageError { return error }
    return .encodingFailed(path: path, message: "\(error)")
  }

  /// Records and reports an error: `lastError`, the error handlers, and the logger.
  func report(_ error: StorageError) {
    state.withLock { $0.lastError = error }
    options.logger.log(.error, error.description)
    for handler in errorHandlers.withLock({ $0 }) { handler(error) }
  }
}
