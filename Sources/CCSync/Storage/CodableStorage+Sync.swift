/// Reading, writing and merging: the rules of DESIGN.md's "Merging" section.
extension CodableStorage {
  /// Writes this process's pending changes now (the field-level change set, applied to the
  /// file's current JSON under the exclusive lock). Without pending changes it writes nothing,
  /// except that a missing file is created with the current value.
  /// - Throws: ``StorageError``; the changes stay pending and are retried per the update mode.
  public func save() throws {
    let (changes, version, seed) = state.withLock { ($0.pendingChanges, $0.version, $0.synced) }
    do {
      let (written, rank) = try document.updateTracked(invalidFile: .preserveAndReplace) { document -> JSONValue in
        document = CodableStorage.applying(changes, seed: seed, to: document)
        return document
      }
      didWrite(written, version: version, rank: rank)
    } catch {
      let storageError = CodableStorage.storageError(error, path: path)
      report(storageError)
      throw storageError
    }
  }

  /// Writes pending changes if there are any (and nothing otherwise); the call to make before
  /// handing the file to someone else, and what exit and deinit do.
  /// - Throws: ``StorageError`` when the write fails.
  public func flush() throws {
    guard hasPendingChanges else { return }
    try save()
  }

  /// Reads the file now, replacing the value in memory by the file's (with this process's
  /// pending changes applied on top, so nothing unsaved is lost).
  /// - Throws: ``StorageError/invalidJSON(path:_:)`` or ``StorageError/decodingFailed(path:message:)``
  ///   (the value in memory is then kept), or I/O errors.
  public func load() throws {
    try readAndAdopt(notify: true)
  }

  /// The exact read-modify-write: takes the file's exclusive lock, reads the latest file, applies
  /// this process's pending changes, runs `body` on the decoded value, writes the result, and
  /// releases the lock. N processes doing M increments each end at exactly N x M. Calls from
  /// several threads may share one write; each sees the result of the one before.
  /// - Returns: what `body` returns.
  /// - Throws: ``StorageError`` (nothing is written), or what `body` throws (its changes are
  ///   discarded).
  @discardableResult
  public func update<Result>(_ body: (inout Value) throws -> Result) throws -> Result {
    let (changes, version, seed) = state.withLock { ($0.pendingChanges, $0.version, $0.synced) }
    var result: Result?
    do {
      let (written, rank) = try document.updateTracked(invalidFile: .preserveAndReplace) { document -> JSONValue in
        document = CodableStorage.applying(changes, seed: seed, to: document)
        var value = try decode(document)
        let before = try options.encoder.encode(value)
        result = try body(&value)
        let after = try options.encoder.encode(value)
        document = JSONChangeSet(from: before, to: after).applied(to: document)
        return document
      }
      didWrite(written, version: version, rank: rank)
    } catch let error as StorageError {
      report(error)
      throw error
    } catch let error as EncodingError {
      throw StorageError.encodingFailed(path: path, message: "\(error)")
    }
    return result!
  }

  /// Reads the file at initialisation: its JSON (over the default's) becomes the value.
  func loadAtStart() {
    do {
      try readAndAdopt(notify: false)
    } catch is StorageError {
      // Recorded and reported by readAndAdopt.
    } catch {
      report(.decodingFailed(path: path, message: "\(error)"))
    }
  }

  /// Reads the file and takes its JSON as the synced version (pending changes on top). A
  /// missing file is noted; an invalid or undecodable one is recorded, reported and thrown.
  private func readAndAdopt(notify: Bool) throws {
    do {
      let (json, rank) = try document.readTracked()
      guard let json else {
        state.withLock { $0.fileState = .missing }
        return
      }
      try adoptChecked(json, origin: .external, savedVersion: nil, rank: rank, notify: notify)
    } catch let error as StorageError {
      state.withLock { $0.fileState = .invalid(error.description) }
      report(error)
      throw error
    }
  }

  /// The document a write of this process's pending `changes` makes of the file's `document`.
  /// A new (or empty) file gets the whole synced value `seed`, not only the changed fields.
  static func applying(_ changes: JSONChangeSet, seed: JSONValue, to document: JSONValue) -> JSONValue {
    let base = isEmptyDocument(document) && !isEmptyDocument(seed) ? seed : document
    return changes.applied(to: base)
  }

  /// Takes a write's result (`written`, recorded under `rank`) and tells the scheduler.
  private func didWrite(_ written: JSONValue, version: UInt64, rank: SharedDocument.Rank?) {
    adopt(written, origin: .local, savedVersion: version, rank: rank)
    scheduler.withLock { $0 }?.didSave()
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
    let encoded: JSONValue
    do {
      encoded = try options.encoder.encode(newValue)
    } catch {
      report(.encodingFailed(path: path, message: "\(error)"))
      return
    }
    let (changed, deliver) = state.withLock { state -> (Bool, Bool) in
      var newValue = newValue
      var encoded = encoded
      if let base, state.encodedValue != base {
        let rebased = JSONChangeSet(from: base, to: encoded).applied(to: state.encodedValue)
        if let value = try? decode(rebased),
           let reencoded = try? options.encoder.encode(value) {
          newValue = value
          encoded = reencoded
        }
      }
      let changed = state.encodedValue != encoded
      state.value = newValue
      state.encodedValue = encoded
      state.version &+= 1
      return (changed, changed && observers.enqueue(StorageChange(value: newValue, origin: .local)))
    }
    guard changed else { return }
    if deliver { observers.deliver() }
    localValueChanged()
  }

  /// The scheduler's write: reports instead of throwing; `true` when nothing is left pending.
  func automaticSave() -> Bool {
    guard hasPendingChanges else { return true }
    return (try? save()) != nil
  }

  /// Takes `json` (what the file holds now, read or just written) as the new synced version.
  /// Local changes made after `savedVersion` (all of them for an external change) stay pending
  /// and are applied on top. Observers hear the result if it differs from the value before.
  ///
  /// `rank` places the version among those the document recorded (see
  /// ``SharedDocument/readIfChangedTracked(contentMayDiffer:)``): a save's result and the
  /// watcher's reload of a later write can arrive in either order, and a version older than
  /// the one already taken is ignored, so the value never goes back to it.
  func adopt(_ json: JSONValue, origin: ChangeOrigin, savedVersion: UInt64?, rank: SharedDocument.Rank?) {
    do {
      try adoptChecked(json, origin: origin, savedVersion: savedVersion, rank: rank)
    } catch let error as StorageError {
      state.withLock { $0.fileState = .invalid(error.description) }
      report(error)
    } catch {
      report(.decodingFailed(path: path, message: "\(error)"))
    }
  }

  func adoptChecked(
    _ json: JSONValue, origin: ChangeOrigin, savedVersion: UInt64?, rank: SharedDocument.Rank?, notify: Bool = true
  ) throws {
    let fileValue = try decode(json)
    let fileEncoded = try options.encoder.encode(fileValue)
    // Decode outside the lock; re-check the version under it. Observers are queued under it
    // too, so they hear changes in the order the value took them, whichever threads made them.
    let deliver = try state.withLock { state -> Bool in
      if let rank {
        if let adopted = state.adoptedRank, rank < adopted { return false }  // already past this version
        state.adoptedRank = rank
      }
      let before = state.encodedValue
      if state.version == savedVersion || !state.hasPendingChanges {
        state.value = fileValue
        state.encodedValue = fileEncoded
      } else {
        let merged = state.pendingChanges.applied(to: json)
        let value = try decode(merged)
        state.value = value
        state.encodedValue = try options.encoder.encode(value)
      }
      state.synced = fileEncoded
      state.fileState = .valid
      state.lastError = nil
      guard notify, before != state.encodedValue else { return false }
      // The value moved only by what the file brought: another process's change, even when
      // this process's own save is what read it.
      return observers.enqueue(StorageChange(value: state.value, origin: .external))
    }
    if deliver { observers.deliver() }
  }

  /// Decodes the file's JSON laid over the default's, so keys the file lacks take the default.
  func decode(_ json: JSONValue) throws(StorageError) -> Value {
    let source: JSONValue
    if case .object = json, case .object = encodedDefault, CodableStorage.lacksMembers(json, of: encodedDefault) {
      source = CodableStorage.overlay(json, on: encodedDefault)
    } else {
      source = json  // the usual case: the file has every key, so the overlay would copy it for nothing
    }
    do {
      return try options.decoder.decode(Value.self, from: source)
    } catch let error as DecodingError {
      throw .decodingFailed(path: path, message: error.readableDescription)
    } catch {
      throw .decodingFailed(path: path, message: "\(error)")
    }
  }

  /// `value`'s members over `base`'s, recursively for objects; `value` wins everywhere else.
  static func overlay(_ value: JSONValue, on base: JSONValue) -> JSONValue {
    guard case .object(let top) = value, case .object(var result) = base else { return value }
    for member in top {
      result[member.key] = overlay(member.value, on: result[member.key] ?? .null)
    }
    return .object(result)
  }

  /// Whether `value` lacks a member `base` has, at any depth where both are objects: whether
  /// ``overlay(_:on:)`` would add anything.
  static func lacksMembers(_ value: JSONValue, of base: JSONValue) -> Bool {
    guard case .object(let object) = value, case .object(let baseObject) = base else { return false }
    for member in baseObject {
      guard let present = object[member.key] else { return true }
      if lacksMembers(present, of: member.value) { return true }
    }
    return false
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
