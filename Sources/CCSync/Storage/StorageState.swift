import CCSyncSystem
import CCSyncJSON

/// The mutable state of one ``CodableStorage``, always accessed under its `Protected`.
struct StorageState<Value> {
  /// How `value` stands against the file: what the merge rules need.
  enum Sync {
    /// `value` was decoded from `source` (the file's JSON laid over the default's) and has
    /// not been changed since: nothing is pending, and its encoding (the synced version too)
    /// is computed only when a local edit or a save needs it (``encodings(_:)``). A reload
    /// that finds no local change takes the file this way, without encoding the value back.
    case decoded(source: JSONValue)
    /// `value` encoded, kept in step with it, and the encoded value as last synced with the
    /// file: what the file held (as this process's type sees it) after the last read or
    /// write. Local changes are `synced` -> `value`.
    case encoded(value: JSONValue, synced: JSONValue)
  }

  /// The value in memory.
  var value: Value
  var sync: Sync
  /// Bumped by every local change, to tell whether one happened during a write.
  var version: UInt64 = 0
  /// The rank of the file version last taken (see `CodableStorage.adopt`).
  var adoptedRank: VersionTracking.Rank?
  var fileState: FileState = .valid
  var lastError: StorageError?

  init(value: Value, encodedValue: JSONValue, synced: JSONValue) {
    self.value = value
    sync = .encoded(value: encodedValue, synced: synced)
  }

  /// `value` encoded and the synced version, encoding `value` now if it is still as decoded
  /// (both are then its encoding). Throws what `encode` throws, changing nothing.
  mutating func encodings(
    _ encode: (Value) throws -> JSONValue
  ) throws -> (value: JSONValue, synced: JSONValue) {
    switch sync {
    case .encoded(let encoded, let synced):
      return (encoded, synced)
    case .decoded:
      let encoded = try encode(value)
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
}
