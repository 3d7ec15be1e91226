import CCSyncJSON

/// Judging a value by the document's gate without writing it: `ccsync validate`, and what a
/// caller checks before it proposes a value.
extension SharedDocument {
  /// Judges `value` as a version of this document would be judged before a write.
  /// - Throws: ``StorageError/rejected(path:reasons:)`` with every reason,
  ///   ``StorageError/schemaUnavailable(path:schema:message:)`` or
  ///   ``StorageError/invalidSchema(path:schema:message:)``.
  public func judge(_ value: JSONValue) throws(StorageError) {
    try judgeByGate(value, bytes: SharedDocument.documentBytes(value))
  }

  /// Whether the gate has anything to judge `value` by: a schema (its own, or one the
  /// value's `$schema` names by path) or a check.
  public func gateApplies(to value: JSONValue) -> Bool {
    gate.mayApply(to: value)
  }
}
