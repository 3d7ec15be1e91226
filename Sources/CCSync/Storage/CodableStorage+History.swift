import CCSyncJSON

/// A storage's history: the versions its document keeps, and a rollback to one of them
/// (docs/SEMANTICS.md, "History").
extension CodableStorage {
  /// The versions kept, newest first, the current one first; at most `limit`.
  /// - Throws: ``StorageError/store(_:)`` when the store cannot be read.
  public func versions(limit: Int? = nil) throws(StorageError) -> [DocumentVersion] {
    try document.versions(limit: limit)
  }

  /// Writes a new version whose content is that of version `id` (a write like any other:
  /// locked or compare-and-swap, judged by the gate, kept in the history as a rollback), then
  /// takes it as the value. Changes of this process not saved yet stay on top of it, as after
  /// ``load()``: save or discard them first to get the version exactly.
  /// - Throws: ``StorageError/versionNotKept(path:id:oldestKept:)``; the gate's refusal;
  ///   what a write or ``load()`` throws.
  public func rollback(to id: String) throws(StorageError) {
    try document.rollback(to: id)
    try load()
  }
}
