import CCSyncSystem

/// What this process learnt of the file histories it wrote (see ``FileHistory``), so that a
/// write by the only writer of a file reads neither the history's keep setting nor its log:
///
/// - the keep setting, with the identity of the `keep` file it was read from (a new setting
///   is a new file renamed over the old one, so another identity);
/// - the log's last version and number of lines, with the log's device, inode and size once
///   this process appended its line. Between compactions (each a new file renamed over the
///   log) the log only grows, so the same file at the same size holds the same lines, and a
///   log that grew is read from where this process left it.
///
/// In memory only: a power cut, which may take back log lines and links not yet on the disk,
/// ends every process that remembered them, and the next one reads the history as it came
/// back (its ids are then never reused; see ``FileHistory``).
///
/// `Sendable`: its tables are `Protected`.
enum HistoryMemory {
  /// A history's keep setting, read from the file of `identity`.
  struct Keep {
    var identity: FileIdentity
    var count: Int
  }

  /// A history's log as this process left it.
  struct Log {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var last: FileHistory.Entry?
    var lines: Int
  }

  /// How many histories each table remembers; past it the table starts again (a process that
  /// writes more files than that reads each history once more).
  static let capacity = 256

  private static let keeps = Protected<[String: Keep]>([:])
  private static let logs = Protected<[String: Log]>([:])

  /// The keep setting remembered for the history in `folder`.
  static func keep(of folder: String) -> Keep? {
    keeps.withLock { $0[folder] }
  }

  /// Remembers the keep setting of the history in `folder`.
  static func remember(_ keep: Keep, of folder: String) {
    remember(keep, of: folder, in: keeps)
  }

  /// The log remembered for the history in `folder`.
  static func log(of folder: String) -> Log? {
    logs.withLock { $0[folder] }
  }

  /// Remembers the log of the history in `folder`, or forgets it (`nil`: a log this process
  /// changed in a way it did not follow).
  static func remember(_ log: Log?, of folder: String) {
    guard let log else {
      logs.withLock { $0[folder] = nil }
      return
    }
    remember(log, of: folder, in: logs)
  }

  private static func remember<Value>(_ value: Value, of folder: String, in table: Protected<[String: Value]>) {
    table.withLock { table in
      if table.count >= capacity, table[folder] == nil { table.removeAll() }
      table[folder] = value
    }
  }
}
