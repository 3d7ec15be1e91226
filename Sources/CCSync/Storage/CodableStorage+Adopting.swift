import CCSyncSystem
import CCSyncJSON

/// Taking a version of the file (another process's write reloaded, or this process's own save's
/// result) as the value: DESIGN.md's "Merging" rule for an external change, and which versions
/// observers hear.
extension CodableStorage {
  /// The local edits a save or update took when it started: the state's version counter and
  /// the value encoded, then.
  struct SavedEdits {
    var version: UInt64
    var value: JSONValue
  }

  /// Takes `json` (what the file holds now, read or just written) as the new synced version.
  /// Local changes made after `saved` was taken (all of them for an external change, where
  /// `saved` is `nil`) stay pending and are applied on top. Observers hear the result, with
  /// `origin`, if it differs from the value before.
  ///
  /// `rank` places the version among those the document recorded (see
  /// ``SharedDocument/readIfChangedTracked(contentMayDiffer:)``): a save's result and the
  /// watcher's reload of a later write can arrive in either order, and a version older than
  /// the one already taken is not taken, so the value never goes back to it. A save's result
  /// that comes too late still settles its edits (see ``settleOutrankedSave(_:state:)``).
  ///
  /// Returns the change observers are to hear, for the caller to ``ObserverList/deliver(_:)``
  /// once it holds no lock (see ``ObserverList/enqueue(_:)``).
  func adopt(
    _ json: JSONValue, origin: ChangeOrigin, saved: SavedEdits?, rank: VersionTracking.Rank?
  ) -> ObserverList<Value>.Delivery? {
    let (delivery, failure) = adoptUnreported(json, origin: origin, saved: saved, rank: rank)
    if let failure { report(failure) }
    return delivery
  }

  /// ``adopt(_:origin:saved:rank:)`` without reporting: returns the failure, if any, for the
  /// caller to report once it is out of the write sequence (a save's own result).
  func adoptUnreported(
    _ json: JSONValue, origin: ChangeOrigin, saved: SavedEdits?, rank: VersionTracking.Rank?
  ) -> (ObserverList<Value>.Delivery?, StorageError?) {
    let failure: StorageError
    do {
      return (try adoptChecked(json, origin: origin, saved: saved, rank: rank), nil)
    } catch let error as StorageError {
      failure = error
    } catch {
      failure = .decodingFailed(path: path, message: "\(error)")
    }
    return state.withLock { state -> (ObserverList<Value>.Delivery?, StorageError?) in
      if let saved, let rank, let adopted = state.adoptedRank, rank < adopted {
        // A late result of this process's save, already outranked by a version taken since:
        // that version stands, and settles the save's edits (``settleOutrankedSave``); what
        // the result held, decodable or not, no longer matters.
        state.lastError = nil
        guard (try? settleOutrankedSave(saved, state: &state)) == true else { return (nil, nil) }
        return (observers.enqueue(StorageChange(value: state.value, origin: .external)), nil)
      }
      state.fileState = .invalid(failure.description)
      if let saved { settleUnreadableWrite(saved, rank: rank, state: &state) }
      return (nil, failure)
    }
  }

  /// A write of this process landed, but what the file now holds cannot be taken as the value
  /// (a member another process wrote that the type cannot decode): the value stays as it is,
  /// and the edits the write took stop being pending. Only edits made since it started stay,
  /// over `saved.value`, the last version of its own this process knows the file holds those
  /// edits of. Without this they would stay pending and be written again at every save, over
  /// whatever other processes wrote to the same fields since, and an automatic mode would
  /// save again at once, for ever.
  private func settleUnreadableWrite(_ saved: SavedEdits, rank: VersionTracking.Rank?, state: inout StorageState<Value>) {
    guard let current = try? encodings(of: &state) else { return }
    state.sync = .encoded(value: current.value, synced: saved.value)
    if let rank, state.adoptedRank.map({ $0 < rank }) ?? true { state.adoptedRank = rank }
  }

  /// ``adopt(_:origin:saved:rank:)``, throwing instead of reporting.
  ///
  /// Without local changes to keep, the value is taken as decoded: it is not encoded back
  /// (the merge needs its encoding only at the next local edit or save, see
  /// ``StorageState/Sync/decoded(source:)``), and whether it differs from the value before is
  /// told by comparing the JSON both were decoded from, when that JSON says nothing the type
  /// may ignore (``isWithinShape(_:of:)``). Otherwise the values' encodings are compared.
  func adoptChecked(
    _ json: JSONValue, origin: ChangeOrigin, saved: SavedEdits?, rank: VersionTracking.Rank?, notify: Bool = true
  ) throws -> ObserverList<Value>.Delivery? {
    let source = decodingSource(json)
    let fileValue = try decode(source: source)
    let comparesSources = CodableStorage.isWithinShape(source, of: encodedDefault)
    // Decode outside the lock; re-check the version under it. Observers are queued under it
    // too, so they hear changes in the order the value took them, whichever threads made them.
    return try state.withLock { state throws(StorageError) -> ObserverList<Value>.Delivery? in
      if let rank {
        if let adopted = state.adoptedRank, rank < adopted {  // already past this version
          guard let saved else { return nil }
          state.lastError = nil  // the save succeeded
          guard try settleOutrankedSave(saved, state: &state), notify else { return nil }
          return observers.enqueue(StorageChange(value: state.value, origin: .external))
        }
        state.adoptedRank = rank
      }
      let takesFileAsIs = state.version == saved?.version || !state.hasPendingChanges
      let changed: Bool
      if takesFileAsIs, comparesSources, case .decoded(let before) = state.sync {
        changed = before != source
        state.value = fileValue
        state.sync = .decoded(source: source)
      } else {
        let before = try encodings(of: &state).value
        let fileEncoded = try encode(fileValue)
        if takesFileAsIs {
          state.value = fileValue
          state.sync = comparesSources ? .decoded(source: source) : .encoded(value: fileEncoded, synced: fileEncoded)
          changed = before != fileEncoded
        } else {
          let value = try decode(state.pendingChanges.applied(to: json))
          let encoded = try encode(value)
          state.value = value
          state.sync = .encoded(value: encoded, synced: fileEncoded)
          changed = before != encoded
        }
      }
      state.fileState = .valid
      state.lastError = nil
      guard notify, changed else { return nil }
      return observers.enqueue(StorageChange(value: state.value, origin: origin))
    }
  }

  /// A save's result that arrives after a newer version was taken (another process wrote
  /// between this save's write and its result being taken here, and the watcher took that
  /// version first, still with this save's edits pending on top). That newer version was
  /// written over this save's, so it already holds the save's edits, or a later write of the
  /// same fields, which must win. The edits the save wrote stop being pending; only edits made
  /// since it started stay on top of the synced version. Without this they would stay
  /// pending, shown over the other process's value and written over it at the next save.
  /// - Returns: whether the value changed.
  private func settleOutrankedSave(_ saved: SavedEdits, state: inout StorageState<Value>) throws(StorageError) -> Bool {
    let current = try encodings(of: &state)
    let since = JSONChangeSet(from: saved.value, to: current.value)
    let value = try decode(since.applied(to: current.synced))
    let encoded = try encode(value)
    state.value = value
    state.sync = .encoded(value: encoded, synced: current.synced)
    return encoded != current.value
  }

  /// The state's encoded value and synced version (see ``StorageState/encodings(_:)``),
  /// encoding the value with this storage's encoder if it is still as decoded.
  func encodings(of state: inout StorageState<Value>) throws(StorageError) -> (value: JSONValue, synced: JSONValue) {
    do {
      return try state.encodings { value in try options.encoder.encode(value) }
    } catch {
      throw .encodingFailed(path: path, message: "\(error)")
    }
  }

  /// `value` encoded with this storage's encoder.
  func encode(_ value: Value) throws(StorageError) -> JSONValue {
    do {
      return try options.encoder.encode(value)
    } catch {
      throw .encodingFailed(path: path, message: "\(error)")
    }
  }

  /// Decodes the file's JSON laid over the default's, so keys the file lacks take the default.
  func decode(_ json: JSONValue) throws(StorageError) -> Value {
    try decode(source: decodingSource(json))
  }

  /// The JSON a value is decoded from: the file's `json` laid over the default's.
  func decodingSource(_ json: JSONValue) -> JSONValue {
    if case .object = json, case .object = encodedDefault, CodableStorage.lacksMembers(json, of: encodedDefault) {
      return CodableStorage.overlay(json, on: encodedDefault)
    }
    return json  // the usual case: the file has every key, so the overlay would copy it for nothing
  }

  /// Decodes `source` as it is (see ``decodingSource(_:)``).
  func decode(source: JSONValue) throws(StorageError) -> Value {
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

  /// Whether every member of `value`, at any depth, is one `shape` (the default value encoded:
  /// the members the type writes) has at the same place; arrays count when their elements are
  /// within the shape of `shape`'s first element, or hold no objects.
  ///
  /// Two such documents that differ decode to values that differ, since the type reads every
  /// member it writes; except where the type folds two spellings into one value (a number
  /// with more digits than a `Double` keeps, a date written two ways, an `init(from:)` that
  /// normalises), when observers may hear the same value again. A member outside the shape (a
  /// key the type does not know, an entry of a dictionary, an optional the default leaves out)
  /// may be one the type ignores, so a change there could leave the value as it was: then only
  /// the values' encodings can tell.
  static func isWithinShape(_ value: JSONValue, of shape: JSONValue) -> Bool {
    switch value {
    case .object(let object):
      guard case .object(let shapeObject) = shape else { return false }
      for member in object {
        guard let memberShape = shapeObject[member.key], isWithinShape(member.value, of: memberShape) else { return false }
      }
      return true
    case .array(let elements):
      let elementShape = shape.arrayValue?.first ?? .null
      return elements.allSatisfy { isWithinShape($0, of: elementShape) }
    case .null, .bool, .number, .string:
      return true
    }
  }
}
