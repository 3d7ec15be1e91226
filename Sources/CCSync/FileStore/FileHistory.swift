import CCSyncSystem
import CCSyncJSON

/// The last versions of a file, kept beside it in `.NAME.history/` (docs/SEMANTICS.md,
/// "History"): each replaced version as a hard link `ID.json` to the file it was (no copy of
/// the data, no `fsync`: the version was made durable when it was written), and one line per
/// version in `versions.log` saying when, who and what it replaced. How many are kept is the
/// history's own setting, in `keep` (default 20; 0 keeps none), so writers with different
/// defaults do not shrink each other's.
///
/// Every call is made under the file's exclusive lock by the writer, which is the only one to
/// change the folder; readers (`ccsync log`) read it without the lock and tolerate a line
/// being appended meanwhile.
struct FileHistory {
  /// How many versions are kept when the history says nothing.
  static let defaultKeep = 20

  /// One version as `versions.log` records it.
  struct Entry: Equatable {
    var id: Int
    var time: String?
    var author: VersionAuthor?
    /// The file the version was: a version written outside ccsync is recognised by its
    /// identity not being the last one recorded.
    var device: UInt64
    var inode: UInt64
    var rollbackOf: String?
  }

  /// A version linked into the history before the write that replaces it, to be recorded
  /// (or undone) once the write is done.
  struct Pending {
    /// The last version the log recorded, and how many lines it holds.
    var last: Entry?
    var recordedLines: Int
    var keep: Int
    /// The id the replaced version was kept under, and the entry to record for it when it
    /// was written outside ccsync.
    var keptID: Int?
    var outsideEntry: Entry?
    var createdFolder: Bool
  }

  /// The resolved path of the file.
  let target: String

  /// `.NAME.history` beside the file.
  var folder: String {
    FilePath.join(FilePath.directory(of: target), "." + FilePath.name(of: target) + ".history")
  }
  private var logPath: String { FilePath.join(folder, "versions.log") }
  private var keepPath: String { FilePath.join(folder, "keep") }

  /// The path of the kept version `id`.
  func versionPath(_ id: Int) -> String { FilePath.join(folder, "\(id).json") }

  /// Whether the version `entry` records is kept: its file is there and is the file the
  /// line names. After a power cut the log and the links may disagree (neither is made
  /// durable: the log's lines are data, the links names), and a file under the id that is
  /// another version must not pass for this one.
  func isKept(_ entry: Entry) -> Bool {
    guard let kept = (try? FileSystem.linkStatus(versionPath(entry.id))) ?? nil else { return false }
    return kept.identity.device == entry.device && kept.identity.inode == entry.inode
  }

  /// How many versions the history keeps.
  func keep() -> Int {
    guard let bytes = try? readSmallFile(keepPath), let number = Int(String(decoding: bytes, as: UTF8.self).trimmingWhitespace()) else {
      return Self.defaultKeep
    }
    return max(0, number)
  }

  /// Sets how many versions the history keeps; made with the folder when it is missing (a
  /// setting of 0 too: without it the next write would start a history of the default size).
  func setKeep(_ count: Int) throws(SystemError) {
    guard count != keep() else { return }
    _ = try makeFolder()
    let temporary = keepPath + ".tmp-" + FileSystem.randomSuffix(length: 6)
    let file = try OpenFile(path: temporary, options: .createExclusive(mode: 0o644))
    do {
      try file.writeAll(Array("\(count)\n".utf8))
      try file.close()
      try FileSystem.rename(temporary, to: keepPath)
    } catch {
      try? FileSystem.removeFile(temporary)
      throw error
    }
    try removeBeyond(newest: (entries().last?.id ?? 0), keep: count)
  }

  /// The versions recorded, oldest first; unreadable lines are skipped.
  func entries() -> [Entry] {
    guard let bytes = try? readSmallFile(logPath) else { return [] }
    return bytes.split(separator: UInt8(ascii: "\n")).compactMap { Self.entry(line: $0) }
  }

  /// The last version recorded and how many lines the log holds: what every write needs,
  /// without parsing the other lines.
  func lastRecorded() -> (last: Entry?, lines: Int) {
    guard let bytes = try? readSmallFile(logPath) else { return (nil, 0) }
    let lines = bytes.split(separator: UInt8(ascii: "\n"))
    return (lines.reversed().lazy.compactMap { Self.entry(line: $0) }.first, lines.count)
  }

  /// The version one line of the log records; `nil` for a line that is not one.
  private static func entry(line: ArraySlice<UInt8>) -> Entry? {
    guard case .object(let object)? = try? JSONValue(parsing: Array(line)),
      let id = object["id"]?.numberValue?.int64Value,
      let device = object["device"]?.numberValue?.int64Value, let inode = object["inode"]?.numberValue?.int64Value
    else { return nil }
    var time: String?
    if case .string(let text)? = object["time"] { time = text }
    var rollbackOf: String?
    if case .string(let text)? = object["rollbackOf"] { rollbackOf = text }
    return Entry(
      id: Int(id), time: time, author: VersionAuthor(json: object["author"]), device: UInt64(bitPattern: device),
      inode: UInt64(bitPattern: inode), rollbackOf: rollbackOf)
  }

  /// Before a write replaces `current`: keeps it, as a link, when the history keeps
  /// versions. Returns what ``record(written:note:after:)`` needs, or `nil` when the history
  /// is off.
  /// - Throws: `SystemError` when the folder or the link cannot be made (the caller reports
  ///   it and writes anyway).
  func keepReplaced(_ current: FileIdentity?) throws(SystemError) -> Pending? {
    let keep = self.keep()
    guard keep > 0 else { return nil }
    let (last, lines) = lastRecorded()
    var pending = Pending(last: last, recordedLines: lines, keep: keep, keptID: nil, outsideEntry: nil, createdFolder: false)
    guard let current else { return pending }
    var id: Int
    if let last, last.inode == current.inode, last.device == current.device {
      id = last.id
    } else {
      // Written by a program that is not ccsync (or before the history began).
      id = (last?.id ?? 0) + 1
      pending.outsideEntry = Entry(
        id: id, time: FileSystem.isoTimestamp(current.modificationTime), author: nil, device: current.device,
        inode: current.inode, rollbackOf: nil)
    }
    do {
      do {
        try linkKeeping(current, as: id)
      } catch where error.errorNumber == .noSuchFileOrDirectory {
        // No folder yet: this is its first version (a write does not try to make it first,
        // which would cost every later write a `mkdir`).
        pending.createdFolder = try makeFolder()
        try linkKeeping(current, as: id)
      }
    } catch {
      // Not kept (a file bind-mounted from elsewhere cannot be linked): no folder for it.
      if pending.createdFolder { try? FileSystem.removeEmptyDirectory(folder) }
      throw error
    }
    pending.keptID = id
    return pending
  }

  /// Links the file (`current`) as the kept version `id`. A file already there is this one
  /// when a write failed after linking it; any other is left by a history that lost log lines
  /// it never made durable (a power cut after links were made, before their lines reached the
  /// disk): it is no version the log now lists as `id`, so it is replaced, lest the log name
  /// another version's bytes.
  private func linkKeeping(_ current: FileIdentity, as id: Int) throws(SystemError) {
    let path = versionPath(id)
    do {
      try FileSystem.link(target, as: path)
    } catch where error.errorNumber == .fileExists {
      if let kept = try FileSystem.linkStatus(path)?.identity, kept.device == current.device, kept.inode == current.inode {
        return
      }
      try FileSystem.removeFile(path)
      try FileSystem.link(target, as: path)
    }
  }

  /// The write after ``keepReplaced(_:)`` failed: the version it kept is still the current
  /// one, and a folder made for it goes too.
  func undo(_ pending: Pending) {
    if let id = pending.keptID, pending.outsideEntry != nil || pending.last?.id != id {
      try? FileSystem.removeFile(versionPath(id))
    }
    if pending.createdFolder { try? FileSystem.removeEmptyDirectory(folder) }
  }

  /// The write is done: records the version written (as `identity`, with `note`), and the
  /// replaced one when it was written outside ccsync.
  /// - Returns: the path of the version that fell out of the window, for the caller to
  ///   remove once the lock is released (it may be gone already).
  func record(written identity: FileIdentity, note: WriteNote?, after pending: Pending) throws(SystemError) -> String {
    // A version linked into the folder proves it is there.
    if pending.keptID == nil, !pending.createdFolder, (try FileSystem.status(folder)) == nil { _ = try makeFolder() }
    let newID = (pending.keptID ?? pending.last?.id ?? 0) + 1
    var lines: [Entry] = []
    if let outside = pending.outsideEntry { lines.append(outside) }
    lines.append(Entry(
      id: newID, time: FileSystem.isoTimestamp(FileSystem.currentTime()), author: .thisProcess, device: identity.device,
      inode: identity.inode, rollbackOf: note?.rollbackOf))
    let text = lines.map { Self.line($0) }.joined()
    let log = try OpenFile(path: logPath, options: .append)
    try log.writeAll(Array(text.utf8))
    try log.close()
    if pending.recordedLines + lines.count > pending.keep + 64 { try compactLog(keeping: pending.keep + 1) }
    // One version falls out of the window per write: the older ones went with earlier writes
    // (or with the sweep of a smaller `keep`, see ``setKeep(_:)``).
    return versionPath(newID - pending.keep - 1)
  }

  /// Removes every kept version older than the `keep` before `newest` (a smaller `keep`).
  private func removeBeyond(newest: Int, keep: Int) throws(SystemError) {
    let kept = entries().map(\.id).filter { $0 <= newest - keep - 1 }
    for id in kept {
      do {
        try FileSystem.removeFile(versionPath(id))
      } catch where error.errorNumber == .noSuchFileOrDirectory {
      }
    }
  }

  /// Rewrites the log with its last `count` versions (no `fsync`: a lost compaction leaves
  /// the longer log, which reads the same).
  private func compactLog(keeping count: Int) throws(SystemError) {
    let entries = self.entries()
    let temporary = logPath + ".tmp-" + FileSystem.randomSuffix(length: 6)
    let file = try OpenFile(path: temporary, options: .createExclusive(mode: 0o644))
    do {
      try file.writeAll(Array(entries.suffix(count).map { Self.line($0) }.joined().utf8))
      try file.close()
      try FileSystem.rename(temporary, to: logPath)
    } catch {
      try? FileSystem.removeFile(temporary)
      throw error
    }
  }

  /// Makes the folder; `true` when this call made it.
  private func makeFolder() throws(SystemError) -> Bool {
    do {
      try FileSystem.makeDirectory(folder, mode: 0o755)
      return true
    } catch where error.errorNumber == .fileExists {
      return false
    }
  }

  /// One line of the log.
  static func line(_ entry: Entry) -> String {
    var object = JSONObject()
    object["id"] = .number(JSONNumber(Int64(entry.id)))
    if let time = entry.time { object["time"] = .string(time) }
    if let author = entry.author { object["author"] = author.json }
    object["device"] = .number(JSONNumber(Int64(bitPattern: entry.device)))
    object["inode"] = .number(JSONNumber(Int64(bitPattern: entry.inode)))
    if let rollbackOf = entry.rollbackOf { object["rollbackOf"] = .string(rollbackOf) }
    return JSONValue.object(object).formatted(.compact) + "\n"
  }

  /// A small file's bytes, or `nil` when it does not exist.
  private func readSmallFile(_ path: String) throws(SystemError) -> [UInt8]? {
    let file: OpenFile
    do {
      file = try OpenFile(path: path, options: .readOnly)
    } catch where error.errorNumber == .noSuchFileOrDirectory {
      return nil
    }
    defer { try? file.close() }
    return try file.readToEnd(sizeHint: 4096)
  }
}

extension String {
  /// This text without blanks and newlines at either end.
  func trimmingWhitespace() -> String {
    var text = Substring(self)
    while let first = text.first, first.isWhitespace { text.removeFirst() }
    while let last = text.last, last.isWhitespace { text.removeLast() }
    return String(text)
  }
}
