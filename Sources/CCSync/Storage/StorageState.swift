import CCSyncJSON

/// The value of one ``CodableStorage`` and how it stands against the document, with the
/// storage layer's merge and ordering rules as mutating functions (docs/ARCHITECTURE.md,
/// "Merging" and "Versions and ranks"). No I/O and no threads: the storage keeps one behind a
/// lock and calls these under it; each is tested on its own.
///
/// The invariants:
/// - local edits are the change set from the synced version to the value (``pendingChanges``);
///   taking a new version keeps them on top of it;
/// - a version ranked below the one last taken is never taken (``adopt(_:decoded:coding:)``);
///   a save's result that arrives so late still settles the edits it wrote;
/// - the edits a write wrote stop being pending once its result is known, even when that
///   result cannot be decoded, so they are never written again over a later change.
struct StorageState<Value: Codable> {
  /// How `value` stands against the document.
  enum Sync {
    /// `value` was decoded from `source` (the document's JSON, the default giving missing members) and
    /// has not been changed since: nothing is pending, and its encoding (the synced version
    /// too) is computed only when a local edit or a save needs it (``encodings(_:)``). A reload
    /// that finds no local change takes the document this way, without encoding the value back.
    case decoded(source: JSONValue)
    /// `value` encoded, kept in step with it, and the encoded value as last synced with the
    /// document: what it held (as this process's type sees it) after the last read or write.
    /// Local changes are `synced` -> `value`.
    case encoded(value: JSONValue, synced: JSONValue)
  }

  /// The local edits a save or update took when it started: the edit counter and the value
  /// encoded, then.
  struct SavedEdits {
    var version: UInt64
    var value: JSONValue
  }

  /// A version of the document to take as the value: another process's write reloaded, or
  /// the result of this process's own save (with the edits it took, `saved`).
  struct IncomingVersion {
    /// The document.
    var json: JSONValue
    /// `json` as decoded (see ``ValueCoding/decodingSource(_:)``).
    var source: JSONValue
    /// Its rank among the versions the document recorded; `nil` when unranked.
    var rank: VersionTracking.Rank?
    /// For a save's own result: the edits the save took.
    var saved: SavedEdits?
  }

  /// What taking a version did.
  enum Adoption {
    /// Nothing: an older version than the one taken, and not a save's result.
    case ignored
    /// The version was taken, with pending edits on top; `changed`: the value moved.
    case taken(changed: Bool)
    /// A save's result older than a version taken since: that version stands, and the save's
    /// edits stopped being pending; `changed`: the value moved (by other processes' fields).
    case settledOutrankedSave(changed: Bool)
    /// The version could not be taken (it does not decode, or the edits on top do not): the
    /// value stays, the state is marked invalid, and a save's edits stop being pending.
    case unreadable(StorageError)
  }

  /// The value in memory.
  var value: Value
  var sync: Sync
  /// Bumped by every local change, to tell whether one happened during a write.
  var version: UInt64 = 0
  /// The rank of the version last taken.
  var adoptedRank: VersionTracking.Rank?
  var fileState: FileState = .valid
  var lastError: StorageError?

  init(value: Value, encodedValue: JSONValue, synced: JSONValue) {
    self.value = value
    sync = .encoded(value: encodedValue, synced: synced)
  }

  /// `value` encoded and the synced version, encoding `value` now if it is still as decoded
  /// (both are then its encoding). Throws what `encode` throws, changing nothing.
  mutating func encodings(_ coding: ValueCoding<Value>) throws(StorageError) -> (value: JSONValue, synced: JSONValue) {
    switch sync {
    case .encoded(let encoded, let synced):
      return (encoded, synced)
    case .decoded:
      let encoded = try coding.encode(value)
      sync = .encoded(value: encoded, synced: encoded)
      return (encoded, encoded)
    }
  }

  /// The field-level change set of this process's unsaved edits.
  var pendingChanges: JSONChangeSet {
    guard case .encoded(let encoded, let synced) = sync else { return JSONChangeSet() }
    return JSONChangeSet(from: synced, to: encoded)
  }

  var hasPendingChanges: Bool {
    guard case .encoded(let encoded, let synced) = sync else { return false }
    return encoded != synced
  }

  /// What a save or update takes when it starts: the pending change set, the edits it covers,
  /// and the synced version (what a document that holds none is seeded with).
  mutating func startWrite(_ coding: ValueCoding<Value>) throws(StorageError) -> (changes: JSONChangeSet, saved: SavedEdits, seed: JSONValue) {
    let (value, synced) = try encodings(coding)
    return (JSONChangeSet(from: synced, to: value), SavedEdits(version: version, value: value), synced)
  }

  /// Takes `newValue` (encoded as `encoded`) as a local change. `base`, when given, is the
  /// encoded value the edit started from: if the value moved on since (a reload, another
  /// thread's edit), only the edit's own field-level changes are applied to the current value,
  /// so the others' changes are not reverted.
  /// - Returns: whether the value changed.
  mutating func edit(
    to newValue: Value, encoded: JSONValue, from base: JSONValue?, _ coding: ValueCoding<Value>
  ) throws(StorageError) -> Bool {
    let current = try encodings(coding)
    var newValue = newValue
    var encoded = encoded
    if let base, current.value != base {
      let rebased = JSONChangeSet(from: base, to: encoded).applied(to: current.value)
      if let value = try? coding.decode(rebased), let reencoded = try? coding.encode(value) {
        newValue = value
        encoded = reencoded
      }
    }
    let changed = current.value != encoded
    value = newValue
    sync = .encoded(value: encoded, synced: current.synced)
    version &+= 1
    return changed
  }

  /// Records what a read that failed with `error` tells of the document: an invalid or
  /// refused version is `.invalid`; a store that could not be asked (no etcd member answered)
  /// tells nothing, so the state stays as the last look found it, unless nothing is known of
  /// the document yet (`atStart`, the storage's first read, or still `.unknown`).
  mutating func readFailed(_ error: StorageError, atStart: Bool) {
    if !error.isStoreUnavailable {
      fileState = .invalid(error.description)
    } else if atStart || fileState.isUnknown {
      fileState = .unknown(error.description)
    }
  }

  /// Takes `incoming` (decoded as `decoded`) as the new synced version: the one adoption path
  /// for reloads, loads and writes' results.
  ///
  /// 1. A version ranked below the one taken last is not taken, so the value never goes back
  ///    to it. If it is a save's result, the version taken since was written over the save's
  ///    and holds its edits (or a later write of the same fields, which must win): the
  ///    save's edits stop being pending, only those made since it started stay on top.
  /// 2. A version that does not decode (or whose pending edits on top do not) leaves the
  ///    value as it is and marks the state invalid. If it is a save's result, the write
  ///    happened: its edits stop being pending, or they would be written again at every save,
  ///    over whatever other processes wrote since.
  /// 3. Otherwise the version is taken: as it is when no edit is pending (or none was made
  ///    since the save that wrote it), else with the pending edits applied on top. Without
  ///    edits to keep, a version within the default's shape is taken as decoded, not encoded
  ///    back, and a change is told by comparing the sources.
  mutating func adopt(
    _ incoming: IncomingVersion, decoded: Result<Value, StorageError>, coding: ValueCoding<Value>
  ) -> Adoption {
    if let rank = incoming.rank, let adopted = adoptedRank, rank < adopted {
      guard let saved = incoming.saved else { return .ignored }
      lastError = nil  // the save succeeded
      guard let changed = try? settleOutrankedSave(saved, coding) else { return .ignored }
      return .settledOutrankedSave(changed: changed)
    }
    let changed: Bool
    do {
      let fileValue = try decoded.get()
      if let rank = incoming.rank { adoptedRank = rank }
      changed = try take(fileValue, incoming, coding)
    } catch {
      fileState = .invalid(error.description)
      if let saved = incoming.saved { settleUnreadableWrite(saved, rank: incoming.rank, coding) }
      return .unreadable(error)
    }
    fileState = .valid
    lastError = nil
    return .taken(changed: changed)
  }

  /// Rule 3 of ``adopt(_:decoded:coding:)``: takes the decoded `fileValue`.
  /// - Returns: whether the value changed.
  private mutating func take(
    _ fileValue: Value, _ incoming: IncomingVersion, _ coding: ValueCoding<Value>
  ) throws(StorageError) -> Bool {
    let takesFileAsIs = version == incoming.saved?.version || !hasPendingChanges
    let comparesSources = coding.comparesSources(incoming.source)
    if takesFileAsIs, comparesSources, case .decoded(let before) = sync {
      value = fileValue
      sync = .decoded(source: incoming.source)
      return before != incoming.source
    }
    let before = try encodings(coding).value
    let fileEncoded = try coding.encode(fileValue)
    if takesFileAsIs {
      value = fileValue
      sync = comparesSources ? .decoded(source: incoming.source) : .encoded(value: fileEncoded, synced: fileEncoded)
      return before != fileEncoded
    }
    let merged = try coding.decode(pendingChanges.applied(to: incoming.json))
    let encoded = try coding.encode(merged)
    value = merged
    sync = .encoded(value: encoded, synced: fileEncoded)
    return before != encoded
  }

  /// Rule 1: a save's result that arrived after a newer version was taken. The edits the save
  /// wrote stop being pending; only edits made since it started stay on top of the synced
  /// version. Without this they would stay pending, shown over the other process's value and
  /// written over it at the next save.
  /// - Returns: whether the value changed.
  private mutating func settleOutrankedSave(_ saved: SavedEdits, _ coding: ValueCoding<Value>) throws(StorageError) -> Bool {
    let current = try encodings(coding)
    let since = JSONChangeSet(from: saved.value, to: current.value)
    let settled = try coding.decode(since.applied(to: current.synced))
    let encoded = try coding.encode(settled)
    value = settled
    sync = .encoded(value: encoded, synced: current.synced)
    return encoded != current.value
  }

  /// Rule 2 for a save's result: the value stays as it is, and the edits the write took stop
  /// being pending. Only edits made since it started stay, over `saved.value`, the last
  /// version of its own this process knows the document holds those edits of.
  private mutating func settleUnreadableWrite(_ saved: SavedEdits, rank: VersionTracking.Rank?, _ coding: ValueCoding<Value>) {
    guard let current = try? encodings(coding) else { return }
    sync = .encoded(value: current.value, synced: saved.value)
    if let rank, adoptedRank.map({ $0 < rank }) ?? true { adoptedRank = rank }
  }
}
