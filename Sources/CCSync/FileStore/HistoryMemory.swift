import CCSyncSystem

/// What this process learnt of one file history it wrote (see ``FileHistory``), so that a
/// write by the only writer of a file reads neither the history's keep setting nor its log:
///
/// - the keep setting, with the identity of the `keep` file it was read from (a new setting
///   is a new file renamed over the old one, so another identity);
/// - the log's last version and number of lines, with the log's device, inode and size once
///   this process appended its line. Between compactions (each a new file renamed over the
///   log) the log only grows, so the same file at the same size holds the same lines, and a
///   log that grew is read from where this process left it.
///
/// One per history folder and process (``of(_:)``), held by each ``FileHistory`` of that
/// folder, so that a write finds it without looking it up.
///
/// In memory only: a power cut, which may take back log lines and links not yet on the disk,
/// ends every process that remembered them, and the next one reads the history as it came
/// back (its ids are then never reused; see ``FileHistory``).
///
/// `Sendable`: its state is `Protected`.
final class HistoryMemory: Sendable {
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
    var last: FileHistory.LoggedVersion?
    var lines: Int
  }

  private let state = Protected<(keep: Keep?, log: Log?)>((nil, nil))

  /// The keep setting remembered.
  var keep: Keep? {
    get { state.withLock { $0.keep } }
    set { state.withLock { $0.keep = newValue } }
  }

  /// The log remembered; `nil` to forget it (a log this process changed in a way it did not
  /// follow).
  var log: Log? {
    get { state.withLock { $0.log } }
    set { state.withLock { $0.log = newValue } }
  }

  /// How many histories the process's table holds; past it the table starts again (a
  /// process that writes more files than that reads each history once more).
  static let capacity = 256

  private static let table = Protected<[String: HistoryMemory]>([:])

  /// The memory of the history in `folder`: the one the table holds, or a new one it then
  /// holds.
  static func of(_ folder: String) -> HistoryMemory {
    table.withLock { table in
      if let memory = table[folder] { return memory }
      if table.count >= capacity { table.removeAll() }
      let memory = HistoryMemory()
      table[folder] = memory
      return memory
    }
  }
}
