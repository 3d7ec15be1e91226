import CCSyncSystem
import CCSyncJSON

/// A document's history: the versions its store keeps, and a rollback to one of them
/// (docs/SEMANTICS.md, "History").
extension SharedDocument {
  /// The versions kept, newest first, the current one first; at most `limit`.
  /// - Throws: ``StorageError/store(_:)`` when the store cannot be read.
  public func versions(limit: Int? = nil) throws(StorageError) -> [DocumentVersion] {
    try storeCall { () throws(StoreError) in try storedVersions(limit: limit) }
  }

  /// The text of the version `id`.
  /// - Throws: ``StorageError/versionNotKept(path:id:oldestKept:)`` when it is not kept or
  ///   never was.
  public func contents(ofVersion id: String) throws(StorageError) -> [UInt8] {
    guard let bytes = try storeCall({ () throws(StoreError) in try storedContents(ofVersion: id) }) else {
      let oldest = (try? versions())?.last?.id
      throw .versionNotKept(path: name, id: id, oldestKept: oldest)
    }
    return bytes
  }

  /// The document of the version `id`.
  /// - Throws: as ``contents(ofVersion:)``; ``StorageError/invalidJSON(path:_:)`` when that
  ///   version was not valid JSON.
  public func value(ofVersion id: String) throws(StorageError) -> JSONValue {
    try parse(try contents(ofVersion: id))
  }

  /// Sets how many versions a file's history keeps (stored with the history, so writers
  /// with other defaults do not change it); 0 keeps none. An etcd key keeps its revisions
  /// until the cluster compacts them.
  public func setHistoryLimit(_ count: Int) throws(StorageError) {
    try storeCall { () throws(StoreError) in try setStoredHistoryLimit(count) }
  }

  /// Writes a new version whose content is that of version `id`, or, with `path`, whose
  /// value at `path` is that version's (removed where that version had none). Written like
  /// any other write: under the lock or by compare-and-swap, judged by the gate, and kept
  /// in the history as a rollback of `id`. A whole rollback restores the version's exact
  /// bytes.
  /// - Throws: ``StorageError/versionNotKept(path:id:oldestKept:)``; the gate's refusal;
  ///   what a write throws.
  public func rollback(to id: String, at path: JSONPath = .root, wait: ContentionWait = .forever) throws(StorageError) {
    let bytes = try contents(ofVersion: id)
    let target = try parse(bytes)
    let writer = DocumentCommit(
      document: self, generationBeforeRead: tracking.withLock { $0.generation }, note: WriteNote(rollbackOf: id)
    ) { found in
      let current = try self.currentVersion(found, policy: .fail)
      let document: JSONValue
      let text: PrintedVersion
      if path.isRoot {
        if let found, found.bytes.hasSameBytes(as: bytes) { return .leave(current) }
        document = target
        text = (bytes, nil, 0)  // parsed with the readers' nesting limit: within it
      } else {
        var changed = current.document ?? .object(JSONObject())
        if let value = try target.value(at: path) {
          try changed.setValue(value, at: path)
        } else {
          _ = try? changed.removeValue(at: path)
        }
        if changed == current.document { return .leave(current) }
        document = changed
        text = SharedDocument.printedVersion(of: changed, over: current, syntax: self.syntax)
        try SharedDocument.checkNesting(text.nesting, name: self.name)
      }
      if self.gate.mayApply(to: document) { try self.judgeByGate(document, bytes: text.bytes) }
      return .replacement(document, text)
    }
    try runInStoreTyped(writer, wait: wait)
  }
}
