import CCSyncJSON
import CCSyncSystem

/// What a mirror remembers of a pair between runs: the last version the file and the key
/// agreed on, kept durably beside the file as `.NAME.ccsync-mirror` so that a restart (after
/// a crash, a `kill -9`, a reboot) merges each side's changes since then instead of taking
/// one side whole. Written atomically and durably after every sync that changed it.
///
/// The history names the key it was made with: a file mirrored to another key has none.
/// The mirror holds the history's lock (`.NAME.ccsync-mirror.lock`) for as long as it runs,
/// so a second mirror of the same file refuses to start.
final class MirrorHistory: Sendable {
  /// `DIR/.NAME.ccsync-mirror` for the file `DIR/NAME`.
  let path: String
  private let file: SharedFile
  private let key: String

  /// The history of `filePath` mirrored to `key`.
  init(filePath: String, key: String) {
    let directory = FilePath.directory(of: filePath)
    path = FilePath.join(directory, "." + FilePath.name(of: filePath) + ".ccsync-mirror")
    file = SharedFile(path: path, logger: .silent)
    self.key = key
  }

  /// The last agreed version, or `nil` when there is none for this key (a first run, or a
  /// history made with another key). A history that cannot be read or parsed is reported by
  /// throwing, never taken for none.
  func agreedVersion() throws(StorageError) -> JSONValue? {
    guard let snapshot = try storeCall({ () throws(StoreError) in try file.read() }) else { return nil }
    let record: JSONValue
    do {
      record = try JSONValue(parsing: snapshot.bytes)
    } catch {
      throw .invalidJSON(path: path, error)
    }
    guard record.objectValue?["key"] == .string(key) else { return nil }
    return record.objectValue?["agreed"]
  }

  /// Records `agreed` as the last version both sides hold, durably.
  func record(_ agreed: JSONValue) throws(StorageError) {
    var object = JSONObject()
    object["key"] = .string(key)
    object["agreed"] = agreed
    let bytes = SharedDocument.documentBytes(.object(object))
    try storeCall { () throws(StoreError) in _ = try file.replaceContents(with: bytes) }
  }

  /// Takes the history's lock for this process's lifetime as the pair's mirror.
  /// - Throws: ``StoreError/lockUnavailable(path:)`` when another mirror holds it.
  func claim() throws(StoreError) -> FileLock {
    try FileLock(resolvedPath: path, exclusive: true, wait: .nonBlocking)
  }
}
