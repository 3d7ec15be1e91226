/// The mutable state of one ``CodableStorage``, always accessed under its `Protected`.
struct StorageState<Value> {
  /// The value in memory.
  var value: Value
  /// `value` encoded, kept in step with it.
  var encodedValue: JSONValue
  /// The encoded value as last synced with the file: what the file held (as this process's
  /// type sees it) after the last read or write. Local changes are `synced` -> `encodedValue`.
  var synced: JSONValue
  /// Bumped by every local change, to tell whether one happened during a write.
  var version: UInt64 = 0
  /// The rank of the file version last taken (see `CodableStorage.adopt`).
  var adoptedRank: SharedDocument.Rank?
  var fileState: FileState = .valid
  var lastError: StorageError?

  init(value: Value, encodedValue: JSONValue, synced: JSONValue) {
    self.value = value
    self.encodedValue = encodedValue
    self.synced = synced
  }

  /// The field-level change set of this process's unsaved edits.
  var pendingChanges: JSONChangeSet {
    JSONChangeSet(from: synced, to: encodedValue)
  }

  var hasPendingChanges: Bool { encodedValue != synced }
}
