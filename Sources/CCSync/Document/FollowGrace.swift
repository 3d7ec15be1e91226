import CCSyncSystem

/// How long a version that looks half written is given before anyone acts on it: the one
/// grace policy of every follower and writer (docs/SEMANTICS.md, "A version half written").
///
/// A program that writes a file in place (truncates it, then writes) shows a reader an empty
/// or cut-off document for as long as its write takes; an editor that saves by moving the old
/// file away and renaming the new one in shows no file for a moment. Reported at once, each
/// would be a false alarm; acted on (a mirror recreating the file), a lost save.
package enum FollowGrace {
  /// How long a version that is not valid, seen right after a change in a store that may
  /// show a write part done (a file), is given to become valid before it is reported (`fileState`, `onError`, `ccsync watch`'s line, the
  /// mirror's). Far longer than an in-place write of a configuration file takes (well under
  /// a millisecond for a few kilobytes, a few milliseconds for a slow disk), short enough
  /// that a person who saved a broken file hears of it at once.
  package static let invalid: Duration = .milliseconds(200)

  /// How long a document that holds nothing (an empty file) and changed that recently is
  /// taken for a writer between its truncate and its write: a reader looks again, every
  /// ``invalid``, until it is older; a writer waits that long before it takes it for an
  /// empty document (`ccsync set` on an empty file).
  package static let empty: Duration = .seconds(1)

  /// What is left of ``empty`` for a file of `identity` looked at now: `nil` when the file
  /// is not empty, or changed that long ago or more (or, by its clock, in the future). The
  /// followers' judgement of a file (``FileStore/partialWrite()``) and the writers' wait
  /// (`ccsync set` on an empty file) both ask this.
  package static func emptyGraceLeft(_ identity: FileIdentity) -> Duration? {
    guard identity.size == 0 else { return nil }
    let age = FileSystem.currentTime().nanoseconds(since: identity.modificationTime)
    let grace = empty.nanoseconds
    guard age >= 0, age < grace else { return nil }
    return .nanoseconds(grace - age)
  }

  /// How long a followed file that disappeared is left missing before anything creates it
  /// again (the mirror): an editor mid-save takes no lock, so a file created meanwhile could
  /// be renamed over its save.
  package static let missing: Duration = .milliseconds(500)

  /// Whether `error`, found in a version seen right after a change, may be a write seen part
  /// way through (when the store shows such, ``DocumentStore/partialWrite()``): a version
  /// that is not valid JSON (empty, cut off) or could not be read (it went away meanwhile). A
  /// version the gate refuses was read whole: it is reported at once.
  static func mayBePartialWrite(_ error: StorageError) -> Bool {
    switch error {
    case .invalidJSON, .store: true
    default: false
    }
  }
}
