import CCSyncSystem

/// The data file as a read under the lock opened it, kept open for the write that follows
/// under the same lock: the write takes the owner, group, mode and extended attributes for its
/// temp file from this descriptor and its `fstat` instead of opening the file a second time
/// (an `openat`, an `fstat` and a `close` less per locked read-modify-write).
///
/// It is the same file the write replaces: the read and the write use the target resolved
/// when the lock was taken, and every writer of the library replaces the file only by a rename
/// made under the exclusive lock, which is still held. A program that ignores the lock can
/// replace or change the file meanwhile; the write then inherits the metadata of the version it
/// read (the one its change was made to) rather than of that newcomer, a choice as good as the
/// other when the lock is ignored.
///
/// The lock's owner closes what is left with ``closeRemaining()`` before it releases the lock:
/// every path out of ``SharedFile/withLockedFile(exclusive:wait:_:)``, errors included.
///
/// `Sendable`: the kept file is only touched under `kept`'s lock, and whoever takes it owns it.
final class ReadHandoff: Sendable {
  /// A file opened by a locked read, with the status `fstat` gave right after the open.
  struct OpenedVersion {
    let file: OpenFile
    let status: FileStatus
  }

  private let kept = Protected<OpenedVersion?>(nil)

  /// Keeps `file`, read under the lock, for the next write; closes any version kept before
  /// (a second read under one lock makes the first one's descriptor useless).
  func keep(_ file: OpenFile, status: FileStatus) {
    let earlier = kept.withLock { kept in
      let earlier = kept
      kept = OpenedVersion(file: file, status: status)
      return earlier
    }
    try? earlier?.file.close()
  }

  /// The version the last read kept, handed over to the caller, who closes it; `nil` when no
  /// read kept one (no read, a missing file, a failed read) or a write already took it. After
  /// a write renamed a new version into place, the old descriptor describes a file that is
  /// gone from the directory, so each kept version serves one write at most.
  func take() -> OpenedVersion? {
    kept.withLock { kept in
      let taken = kept
      kept = nil
      return taken
    }
  }

  /// Closes the kept version if no write took it. Errors are ignored: nothing was written
  /// through a descriptor opened read-only.
  func closeRemaining() {
    try? take()?.file.close()
  }
}
