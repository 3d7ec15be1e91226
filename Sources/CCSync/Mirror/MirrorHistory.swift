import CCSyncJSON
import CCSyncSystem

/// What a mirror remembers of a pair between runs, kept durably beside the file as
/// `.NAME.ccsync-mirror` so that a restart (after a crash, a `kill -9`, a reboot) merges each
/// side's changes instead of taking one side whole (docs/SEMANTICS.md, "Mirror"):
///
/// - `agreed`: the last version the file and the key both held;
/// - `pending`, while a sync writes: the version it is making both sides hold and what it
///   read from each. A sync records it before its first write and replaces it with the new
///   agreed version after its last, so a run that stopped in between (a crash, a write that
///   failed) leaves it behind, and the next sync knows which of each side's differences were
///   that sync's own writes (see ``MirrorMerge/init(interrupted:file:key:)``).
///
/// Written atomically and durably (``SharedFile/replaceContents(with:)``). The record names
/// the key it was made with: a file mirrored to another key has no history. The mirror holds
/// the record's lock (`.NAME.ccsync-mirror.lock`) for as long as it runs, so a second mirror
/// of the same file refuses to start; so the record is read from the file once, and after
/// that it is the one this process last wrote, kept in memory (a sync does not read and
/// parse it again). The record of `ccsync mirror` (``MirrorRecordStore``).
final class MirrorHistory: MirrorRecordStore {
  /// A sync between its first write and its last.
  struct Pending: Equatable {
    /// What the sync was making both sides hold.
    var merged: JSONValue
    /// What it read from the file; `nil` when the file was missing.
    var file: JSONValue?
    /// What it read from the key; `nil` when the key was missing.
    var key: JSONValue?
  }

  /// The pair's history.
  struct Record: Equatable {
    /// The last version both sides held; `nil` before the first sync finished.
    var agreed: JSONValue?
    /// A sync that started writing and has not recorded its result.
    var pending: Pending?
  }

  /// `DIR/.NAME.ccsync-mirror` for the file `DIR/NAME`.
  let path: String
  private let file: SharedFile
  private let key: String
  /// The record as last read or written; `nil` until the first ``load()``.
  private let known = Protected<Record??>(nil)

  /// The history of `filePath` mirrored to `key`.
  init(filePath: String, key: String) {
    let directory = FilePath.directory(of: filePath)
    path = FilePath.join(directory, "." + FilePath.name(of: filePath) + ".ccsync-mirror")
    file = SharedFile(path: path, logger: .silent)
    self.key = key
  }

  /// The pair's history, or `nil` when there is none for this key (a first run, or a
  /// history made with another key). A history that cannot be read or parsed is reported by
  /// throwing, never taken for none.
  func load() throws(StorageError) -> Record? {
    if let record = known.withLock({ $0 }) { return record }
    let record = try loadFromFile()
    known.withLock { $0 = .some(record) }
    return record
  }

  private func loadFromFile() throws(StorageError) -> Record? {
    guard let snapshot = try storeCall({ () throws(StoreError) in try file.read() }) else { return nil }
    let stored: JSONValue
    do {
      stored = try JSONValue(parsing: snapshot.bytes)
    } catch {
      throw .invalidJSON(path: path, error)
    }
    guard let object = stored.objectValue, object["key"] == .string(key) else { return nil }
    let pending = object["pending"]?.objectValue.flatMap { pending in
      pending["merged"].map { Pending(merged: $0, file: pending["file"], key: pending["key"]) }
    }
    let record = Record(agreed: object["agreed"], pending: pending)
    return record.agreed == nil && record.pending == nil ? nil : record
  }

  /// Records `record` durably.
  func save(_ record: Record) throws(StorageError) {
    var object = JSONObject()
    object["key"] = .string(key)
    if let agreed = record.agreed { object["agreed"] = agreed }
    if let pending = record.pending {
      var members = JSONObject()
      members["merged"] = pending.merged
      if let file = pending.file { members["file"] = file }
      if let key = pending.key { members["key"] = key }
      object["pending"] = .object(members)
    }
    let bytes = SharedDocument.documentBytes(.object(object))
    // Forgotten first: a save that fails may or may not have replaced the file.
    known.withLock { $0 = nil }
    try storeCall { () throws(StoreError) in _ = try file.replaceContents(with: bytes) }
    known.withLock { $0 = .some(record.agreed == nil && record.pending == nil ? nil : record) }
  }

  /// Takes the history's lock for this process's lifetime as the pair's mirror.
  /// - Throws: ``StoreError/lockUnavailable(path:)`` when another mirror holds it.
  func claim() throws(StoreError) -> any MirrorPairClaim {
    try FileLock(resolvedPath: path, exclusive: true, wait: .nonBlocking)
  }
}
