import CCSyncEtcd
import CCSyncJSON
import CCSyncSystem

/// An etcd key's history: its revisions, walked back one `range` at a time until the key was
/// created or the cluster compacted the rest; each revision's author from the stamp ccsync
/// wrote beside it in the same transaction (``WriteStamps``).
extension EtcdStore {
  func versions(limit: Int?) throws(StoreError) -> [DocumentVersion] {
    let client = try self.client.get()
    var versions: [DocumentVersion] = []
    var revision: Int64?
    while versions.count < (limit ?? Int.max) {
      let found: EtcdKeyValue?
      do {
        found = try client.get(key, revision: revision).keyValue
      } catch {
        if case .compacted = error { break }
        throw StoreError(error, name: name)
      }
      guard let keyValue = found else { break }
      versions.append(try version(keyValue, isCurrent: revision == nil, client: client))
      if keyValue.createRevision == keyValue.modRevision || keyValue.modRevision <= 1 { break }
      revision = keyValue.modRevision - 1
    }
    return versions
  }

  /// The revision `keyValue` is, signed by the stamp written with it, when ccsync wrote it.
  private func version(_ keyValue: EtcdKeyValue, isCurrent: Bool, client: EtcdClient) throws(StoreError) -> DocumentVersion {
    let revision = keyValue.modRevision
    let stamp = try? client.get(stampKey, revision: revision).keyValue
    var time: String?
    var author: VersionAuthor?
    var rollbackOf: String?
    if let stamp, stamp.modRevision == revision, case .object(let object)? = try? JSONValue(parsing: stamp.value) {
      if case .string(let text)? = object["time"] { time = text }
      author = VersionAuthor(json: object["author"])
      if case .string(let text)? = object["rollbackOf"] { rollbackOf = text }
    }
    return DocumentVersion(id: String(revision), time: time, author: author, rollbackOf: rollbackOf, isCurrent: isCurrent)
  }

  func contents(ofVersion id: String) throws(StoreError) -> [UInt8]? {
    guard let revision = Int64(id), revision > 0 else { return nil }
    let client = try self.client.get()
    do {
      guard let keyValue = try client.get(key, revision: revision).keyValue, keyValue.modRevision == revision else { return nil }
      return keyValue.value
    } catch {
      if case .compacted = error { return nil }
      // A revision past the store's newest is one that never was.
      if case .server = error { return nil }
      throw StoreError(error, name: name)
    }
  }

  func setHistoryLimit(_ count: Int) throws(StoreError) {}
}
