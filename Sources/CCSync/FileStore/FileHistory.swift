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
///
/// `Sendable`: immutable; its ``HistoryMemory`` guards its own state.
final class FileHistory: Sendable {
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

  /// What a write needs of a version the log records: its id and the file it was (no time,
  /// no author: reading those would make strings no write uses).
  struct LoggedVersion: Equatable {
    var id: Int
    var device: UInt64
    var inode: UInt64

    init(id: Int, device: UInt64, inode: UInt64) {
      (self.id, self.device, self.inode) = (id, device, inode)
    }

    init(_ entry: Entry) {
      self.init(id: entry.id, device: entry.device, inode: entry.inode)
    }

    /// The version `id` as the file of `identity`.
    init(id: Int, _ identity: FileIdentity) {
      self.init(id: id, device: identity.device, inode: identity.inode)
    }

    /// Whether this is the version of the file of `identity`.
    func isVersion(_ identity: FileIdentity) -> Bool {
      inode == identity.inode && device == identity.device
    }
  }

  /// The log as a write found it: open for the write's line, with the last version it
  /// records and how many lines it holds.
  struct RecordedLog {
    /// `nil` when there is no log yet.
    var file: OpenFile?
    var identity: FileIdentity?
    var last: LoggedVersion?
    var lines: Int
  }

  /// A version linked into the history before the write that replaces it, to be recorded
  /// (or undone) once the write is done.
  struct Pending {
    var log: RecordedLog
    var keep: Int
    /// The id the replaced version was kept under.
    var keptID: Int?
    /// The replaced version and when it was last changed, when it was written outside
    /// ccsync: recorded (with that time) before the version written.
    var outside: (version: LoggedVersion, modified: FileIdentity.Timestamp)?
    var createdFolder: Bool
  }

  /// The resolved path of the file.
  let target: String
  /// `.NAME.history` beside the file.
  let folder: String
  private let logPath: String
  private let keepPath: String
  /// What this process remembers of the history.
  private let memory: HistoryMemory

  init(target: String) {
    self.target = target
    folder = FilePath.join(FilePath.directory(of: target), "." + FilePath.name(of: target) + ".history")
    logPath = folder + "/versions.log"
    keepPath = folder + "/keep"
    memory = HistoryMemory.of(folder)
  }

  /// The path of the kept version `id`.
  func versionPath(_ id: Int) -> String {
    var name: [UInt8] = []
    name.reserveCapacity(26)
    name.append(UInt8(ascii: "/"))
    Self.appendNumber(Int64(id), to: &name)
    Self.append(".json", to: &name)
    // One allocation: the folder's bytes and the name's, straight into the string.
    return String(unsafeUninitializedCapacity: folder.utf8.count + name.count) { buffer in
      let end = buffer.initialize(fromContentsOf: folder.utf8)
      return buffer[end...].initialize(fromContentsOf: name)
    }
  }

  /// Whether the version `entry` records is kept: its file is there and is the file the
  /// line names. After a power cut the log and the links may disagree (neither is made
  /// durable: the log's lines are data, the links names), and a file under the id that is
  /// another version must not pass for this one.
  func isKept(_ entry: Entry) -> Bool {
    guard let kept = (try? FileSystem.linkStatus(versionPath(entry.id))) ?? nil else { return false }
    return kept.identity.device == entry.device && kept.identity.inode == entry.inode
  }

  /// How many versions the history keeps: read once per process and `keep` file (see
  /// ``HistoryMemory``), then known from its identity.
  func keep() -> Int {
    guard let status = (try? FileSystem.status(keepPath)) ?? nil else { return Self.defaultKeep }
    if let known = memory.keep, known.identity == status.identity { return known.count }
    guard let file = try? OpenFile(path: keepPath, options: .readOnly), let read = try? file.status(),
      let bytes = try? file.readRegularFile(size: Int(read.identity.size))
    else { return Self.defaultKeep }
    let count = Int(String(decoding: bytes, as: UTF8.self).trimmingWhitespace()).map { max(0, $0) } ?? Self.defaultKeep
    memory.keep = HistoryMemory.Keep(identity: read.identity, count: count)
    return count
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
    return bytes.split(separator: Self.lineBreak).compactMap { Self.entry(line: $0) }
  }

  /// Opens the log for the write that replaces `current`, and tells what it records: from
  /// this process's memory when the log is as this process left it (and its last version is
  /// `current`), from the lines added since when it grew, from the whole log otherwise.
  private func openLog(replacing current: FileIdentity?) throws(SystemError) -> RecordedLog {
    let file: OpenFile
    do {
      file = try OpenFile(path: logPath, options: .readAndAppend)
    } catch where error.errorNumber == .noSuchFileOrDirectory {
      return RecordedLog(file: nil, identity: nil, last: nil, lines: 0)
    }
    let identity = try file.status().identity
    var log = RecordedLog(file: file, identity: identity, last: nil, lines: 0)
    if let known = memory.log, known.device == identity.device, known.inode == identity.inode {
      if known.size == identity.size, current.map({ known.last?.isVersion($0) ?? false }) ?? true {
        (log.last, log.lines) = (known.last, known.lines)
        return log
      }
      if known.size > 0, known.size < identity.size {
        // Read from the line break that ended the known lines: text that does not start
        // there is not the log this process knew.
        let added = try file.read(count: Int(identity.size - known.size) + 1, at: known.size - 1)
        if added.first == Self.lineBreak, let last = Self.lastLoggedVersion(in: added.dropFirst()) {
          (log.last, log.lines) = (last, known.lines + Self.lineCount(added.dropFirst()))
          return log
        }
      }
    }
    let bytes = try file.readRegularFile(size: Int(identity.size))
    (log.last, log.lines) = (Self.lastLoggedVersion(in: bytes[...]), Self.lineCount(bytes[...]))
    return log
  }


  /// Before a write replaces `current`: keeps it, as a link, when the history keeps
  /// versions. Returns what ``record(written:note:after:)`` needs, or `nil` when the history
  /// is off.
  /// - Throws: `SystemError` when the folder or the link cannot be made (the caller reports
  ///   it and writes anyway).
  func keepReplaced(_ current: FileIdentity?) throws(SystemError) -> Pending? {
    let keep = self.keep()
    guard keep > 0 else { return nil }
    let log = try openLog(replacing: current)
    var pending = Pending(log: log, keep: keep, keptID: nil, outside: nil, createdFolder: false)
    guard let current else { return pending }
    let last = log.last
    var id: Int
    if let last, last.isVersion(current) {
      id = last.id
    } else {
      // Written by a program that is not ccsync (or before the history began).
      id = (last?.id ?? 0) + 1
      pending.outside = (LoggedVersion(id: id, current), current.modificationTime)
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
    try? pending.log.file?.close()
    if let id = pending.keptID, pending.outside != nil || pending.log.last?.id != id {
      try? FileSystem.removeFile(versionPath(id))
    }
    if pending.createdFolder { try? FileSystem.removeEmptyDirectory(folder) }
  }

  /// The write is done: records the version written (as `identity`, with `note`), and the
  /// replaced one when it was written outside ccsync.
  /// - Returns: the path of the version that fell out of the window, for the caller to
  ///   remove once the lock is released (it may be gone already).
  func record(written identity: FileIdentity, note: WriteNote?, after pending: Pending) throws(SystemError) -> String {
    // A version linked into the folder, or a log, proves it is there.
    if pending.keptID == nil, pending.log.file == nil, !pending.createdFolder, (try FileSystem.status(folder)) == nil {
      _ = try makeFolder()
    }
    let written = LoggedVersion(id: (pending.keptID ?? pending.log.last?.id ?? 0) + 1, identity)
    var text: [UInt8] = []
    text.reserveCapacity(512)
    if let outside = pending.outside {
      Self.appendLine(
        Entry(
          id: outside.version.id, time: FileSystem.isoTimestamp(outside.modified), author: nil,
          device: outside.version.device, inode: outside.version.inode, rollbackOf: nil),
        to: &text)
    }
    Self.appendWrittenLine(written, time: FileSystem.currentTime(), rollbackOf: note?.rollbackOf, to: &text)
    let lineCount = pending.log.lines + (pending.outside == nil ? 1 : 2)
    do throws(SystemError) {
      let log: OpenFile
      if let opened = pending.log.file { log = opened } else { log = try OpenFile(path: logPath, options: .append) }
      var logIdentity: FileIdentity
      // Past its size, the log's last lines, read through the same descriptor (a log that
      // was there, opened for reading).
      var compacted: [UInt8]?
      do {
        try log.writeAll(text)
        // Under the lock no other writer appends: the log is its old size and this line (a
        // log made now is measured).
        if let before = pending.log.identity {
          logIdentity = before
          logIdentity.size += Int64(text.count)
        } else {
          logIdentity = try log.status().identity
        }
        if lineCount > pending.keep + Self.linesBeforeCompaction, pending.log.file != nil {
          compacted = try compactedLog(log, size: logIdentity.size, keeping: pending.keep + 1)
        }
      } catch {
        try? log.close()
        throw error
      }
      try log.close()
      if let compacted {
        memory.log = nil
        try replaceLog(with: compacted)
      } else {
        memory.log = HistoryMemory.Log(
          device: logIdentity.device, inode: logIdentity.inode, size: logIdentity.size, last: written, lines: lineCount)
      }
    } catch {
      memory.log = nil
      throw error
    }
    // One version falls out of the window per write: the older ones went with earlier writes
    // (or with the sweep of a smaller `keep`, see ``setKeep(_:)``).
    return versionPath(written.id - pending.keep - 1)
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

  /// How many lines past the keep setting the log grows before it is compacted.
  static let linesBeforeCompaction = 64

  /// The log, open as `log` and `size` bytes long, with its last `count` versions only: their
  /// lines copied as they are, checked but not made into entries; lines that record no
  /// version (text a power cut cut short or left as zeros) are left out.
  private func compactedLog(_ log: OpenFile, size: Int64, keeping count: Int) throws(SystemError) -> [UInt8] {
    let bytes = try log.read(count: Int(size), at: 0)
    var kept: [Range<Int>] = []
    kept.reserveCapacity(count)
    for line in LinesFromEnd(bytes[...]) where Self.loggedVersion(line: line) != nil {
      kept.append(line.indices)
      if kept.count == count { break }
    }
    var text: [UInt8] = []
    text.reserveCapacity(kept.reduce(0) { $0 + $1.count + 1 })
    for line in kept.reversed() {
      text.append(contentsOf: bytes[line])
      text.append(Self.lineBreak)
    }
    return text
  }

  /// Puts `text` in place of the log, by rename (no `fsync`: a lost compaction leaves the
  /// longer log, which reads the same).
  private func replaceLog(with text: [UInt8]) throws(SystemError) {
    let temporary = logPath + ".tmp-" + FileSystem.randomSuffix(length: 6)
    let file = try OpenFile(path: temporary, options: .createExclusive(mode: 0o644))
    do {
      try file.writeAll(text)
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

extension FileHistory.Entry {
  /// Whether this entry records the file of `identity`.
  func isVersion(_ identity: FileIdentity) -> Bool {
    inode == identity.inode && device == identity.device
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
