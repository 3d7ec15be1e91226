import CCSyncSystem
import CCSyncJSON

/// Writing a text as it is: what a person wrote in an editor, comments and layout included.
extension SharedDocument {
  /// Replaces the document with `text` exactly, if the store still holds `original`: under
  /// the lock (or by compare-and-swap), judged by the gate, kept in the history. `edit` uses
  /// it to write a person's text, comments and layout included, when nothing changed
  /// meanwhile.
  /// - Returns: `false`, writing nothing, when the store holds another version than
  ///   `original` (the caller merges instead) or already holds `text`.
  /// - Throws: ``StorageError/invalidJSON(path:_:)`` when `text` is not a valid document;
  ///   the gate's refusal; what a write throws.
  public func replaceText(_ text: [UInt8], ifUnchangedFrom original: [UInt8], wait: LockWait = .forever) throws(StorageError) -> Bool {
    let value = try parse(text)
    var written = false
    let writer = DocumentCommit(document: self, generationBeforeRead: tracking.withLock(\.generation)) { found in
      guard let found, found.bytes.hasSameBytes(as: original), !found.bytes.hasSameBytes(as: text) else { return .abandon }
      if self.gate.mayApply(to: value) { try self.gate.judge(value, bytes: text, in: self.store) }
      written = true
      return .replacement(value, (text, nil, value.nestingDepth))
    }
    do {
      try runInStore(writer, wait: wait)
    } catch let error as StorageError {
      throw error
    } catch {
      throw .encodingFailed(path: name, message: "\(error)")
    }
    return written
  }
}
