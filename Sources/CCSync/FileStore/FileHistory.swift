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

  /// The log as a write found it: open for the write's line, with the last version it
  /// records and how many lines it holds.
  struct RecordedLog {
    /// `nil` when there is no log yet.
    var file: OpenFile?
    var identity: FileIdentity?
    var last: Entry?
    var lines: Int
  }

  /// A version linked into the history before the write that replaces it, to be recorded
  /// (or undone) once the write is done.
  struct Pending {
    var log: RecordedLog
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
  let folder: String
  private let logPath: String
  private let keepPath: String

  init(target: String) {
    self.target = target
    folder = FilePath.join(FilePath.directory(of: target), "." + FilePath.name(of: target) + ".history")
    logPath = folder + "/versions.log"
    keepPath = folder + "/keep"
  }

  /// The path of the kept version `id`.
  func versionPath(_ id: Int) -> String {
    var path = Array(folder.utf8)
    path.reserveCapacity(path.count + 26)
    path.append(UInt8(ascii: "/"))
    Self.appendNumber(Int64(id), to: &path)
    path += ".json".utf8
    return String(decoding: path, as: UTF8.self)
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
    if let known = HistoryMemory.keep(of: folder), known.identity == status.identity { return known.count }
    guard let file = try? OpenFile(path: keepPath, options: .readOnly), let read = try? file.status(),
      let bytes = try? file.readRegularFile(size: Int(read.identity.size))
    else { return Self.defaultKeep }
    let count = Int(String(decoding: bytes, as: UTF8.self).trimmingWhitespace()).map { max(0, $0) } ?? Self.defaultKeep
    HistoryMemory.remember(HistoryMemory.Keep(identity: read.identity, count: count), of: folder)
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
    if let known = HistoryMemory.log(of: folder), known.device == identity.device, known.inode == identity.inode {
      if known.size == identity.size, current.map({ known.last?.isVersion($0) ?? false }) ?? true {
        (log.last, log.lines) = (known.last, known.lines)
        return log
      }
      if known.size > 0, known.size < identity.size {
        // Read from the line break that ended the known lines: text that does not start
        // there is not the log this process knew.
        let added = try file.read(count: Int(identity.size - known.size) + 1, at: known.size - 1)
        if added.first == Self.lineBreak, let last = Self.lastEntry(in: added.dropFirst()) {
          (log.last, log.lines) = (last, known.lines + Self.lineCount(added.dropFirst()))
          return log
        }
      }
    }
    let bytes = try file.readRegularFile(size: Int(identity.size))
    (log.last, log.lines) = (Self.lastEntry(in: bytes[...]), Self.lineCount(bytes[...]))
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
    var pending = Pending(log: log, keep: keep, keptID: nil, outsideEntry: nil, createdFolder: false)
    guard let current else { return pending }
    let last = log.last
    var id: Int
    if let last, last.isVersion(current) {
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
    try? pending.log.file?.close()
    if let id = pending.keptID, pending.outsideEntry != nil || pending.log.last?.id != id {
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
    let newID = (pending.keptID ?? pending.log.last?.id ?? 0) + 1
    var lines: [Entry] = []
    if let outside = pending.outsideEntry { lines.append(outside) }
    let written = Entry(
      id: newID, time: FileSystem.isoTimestamp(FileSystem.currentTime()), author: .thisProcess, device: identity.device,
      inode: identity.inode, rollbackOf: note?.rollbackOf)
    lines.append(written)
    var text: [UInt8] = []
    text.reserveCapacity(256)
    for line in lines { Self.appendLine(line, to: &text) }
    let lineCount = pending.log.lines + lines.count
    do throws(SystemError) {
      let log: OpenFile
      if let opened = pending.log.file { log = opened } else { log = try OpenFile(path: logPath, options: .append) }
      try log.writeAll(text)
      // Under the lock no other writer appends: the log is its old size and this line (a
      // log made now is measured).
      var logIdentity: FileIdentity
      if let before = pending.log.identity {
        logIdentity = before
        logIdentity.size += Int64(text.count)
      } else {
        logIdentity = try log.status().identity
      }
      try log.close()
      let compacts = lineCount > pending.keep + 64
      HistoryMemory.remember(
        compacts ? nil : HistoryMemory.Log(
          device: logIdentity.device, inode: logIdentity.inode, size: logIdentity.size, last: written, lines: lineCount),
        of: folder)
      if compacts { try compactLog(keeping: pending.keep + 1) }
    } catch {
      HistoryMemory.remember(nil, of: folder)
      throw error
    }
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
  /// the longer log, which reads the same). Their lines are copied as they are; lines that
  /// record no version (text a power cut cut short or left as zeros) are left out.
  private func compactLog(keeping count: Int) throws(SystemError) {
    guard let bytes = try readSmallFile(logPath) else { return }
    var kept: [ArraySlice<UInt8>] = []
    for line in Self.linesFromEnd(bytes[...]) where Self.entry(line: line) != nil {
      kept.append(line)
      if kept.count == count { break }
    }
    var text: [UInt8] = []
    for line in kept.reversed() {
      text.append(contentsOf: line)
      text.append(Self.lineBreak)
    }
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
