import CCSyncSystem
import CCSyncJSON

/// Writing a text as it is: what a person wrote in an editor, comments and layout included.
extension SharedDocument {
  /// Replaces the document with `text` exactly, if the store still holds `original` (any
  /// version when `original` is `nil`): under the lock (or by compare-and-swap), judged by
  /// the gate, kept in the history. `edit` uses it to write a person's text, comments and
  /// layout included, when nothing changed meanwhile; `save` to write standard input as it
  /// is. The document's `$schema` member is kept when `text` has none (added to it, in its
  /// style).
  /// - Returns: `false`, writing nothing, when the store holds another version than
  ///   `original` (the caller merges instead) or already holds `text`.
  /// - Throws: ``StorageError/invalidJSON(path:_:)`` when `text` is not a valid document;
  ///   the gate's refusal; what a write throws.
  public func replaceText(_ text: [UInt8], ifUnchangedFrom original: [UInt8]?, wait: ContentionWait = .forever) throws(StorageError) -> Bool {
    let given = try parse(text)
    var written = false
    let writer = DocumentCommit(document: self, generationBeforeRead: tracking.withLock { $0.generation }) { found in
      if let original {
        guard let found, found.bytes.hasSameBytes(as: original) else { return .abandon }
      }
      var value = given
      var bytes = text
      // A version that is not valid JSON is never replaced by a write (the CLI's policy).
      if let current = try self.currentVersion(found, policy: .fail).document {
        value = DocumentGate.keepingSchemaMember(of: current, in: given)
        if value != given { bytes = LosslessJSONDocument(bytes: text, syntax: self.syntax, value: given).bytes(updatedTo: value) }
      }
      if let found, found.bytes.hasSameBytes(as: bytes) { return .abandon }
      if self.gate.mayApply(to: value) { try self.judgeByGate(value, bytes: bytes) }
      written = true
      return .replacement(value, (bytes, nil, value.nestingDepth))
    }
    try runInStoreTyped(writer, wait: wait)
    return written
  }
}
