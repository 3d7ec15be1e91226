import CCSyncSystem

/// Why a watcher woke a watch: in every case "the file may have changed, look again".
///
/// The subscriber compares the file's identity (`FileIdentity`) and, when
/// `contentMayChangeInPlace` is true, its bytes too, before reloading. Several reasons for
/// one watch found together are merged into one call carrying the strongest of them (in
/// the order of the cases below). `Sendable`.
public enum FileWatchReason: Sendable, Hashable, CustomStringConvertible {
  /// `IN_Q_OVERFLOW`: the kernel dropped events; every watch is woken and every watched
  /// directory checked again.
  case overflow
  /// The path leads somewhere else now: a watched directory went away or came back, or a
  /// symbolic link on the path (a ConfigMap's `..data`) was replaced; the watches were moved.
  case rearmed
  /// An event in a watched directory named the file or a link on its path. `inPlaceWrite`
  /// is true when the file itself was written (`IN_MODIFY`, `IN_CLOSE_WRITE`): its bytes may
  /// differ while its identity does not (same inode, and a timestamp tick can hide a write).
  case directoryEvent(inPlaceWrite: Bool)
  /// The delay asked for with `FileWatch.recheck(after:)` has passed.
  case requested
  /// Polling noticed that the file's identity changed (it appeared, vanished or changed).
  case poll
  /// The periodic safety re-check, in case an event was missed.
  case safetyRecheck

  /// Whether the file's bytes may have changed although its identity did not, so a
  /// subscriber should compare contents, not only identities.
  public var contentMayChangeInPlace: Bool {
    switch self {
    case .overflow, .rearmed, .requested: true
    case .directoryEvent(let inPlaceWrite): inPlaceWrite
    case .poll, .safetyRecheck: false
    }
  }

  /// Orders reasons for merging: the larger one wins.
  var strength: Int {
    switch self {
    case .overflow: 6
    case .rearmed: 5
    case .directoryEvent(inPlaceWrite: true): 4
    case .requested: 3
    case .directoryEvent(inPlaceWrite: false): 2
    case .poll: 1
    case .safetyRecheck: 0
    }
  }

  /// The stronger of two reasons.
  func merged(with other: FileWatchReason) -> FileWatchReason {
    other.strength > strength ? other : self
  }

  /// One word, or `directoryEvent(inPlaceWrite)`: `overflow`, `rearmed`, `poll`...
  public var description: String {
    switch self {
    case .overflow: "overflow"
    case .rearmed: "rearmed"
    case .directoryEvent(let inPlaceWrite): inPlaceWrite ? "inPlaceWrite" : "directoryEvent"
    case .requested: "requested"
    case .poll: "poll"
    case .safetyRecheck: "safetyRecheck"
    }
  }
}
