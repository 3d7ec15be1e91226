import CCSyncSystem

/// The names a replacement of one resolved file works with: its directory, its own name and
/// the path prefix of its temp files. Worked out once per target and kept by the
/// ``SharedFile`` (see ``SharedFile/atomicReplace(target:original:)``), since a locked
/// read-modify-write is otherwise spending its time under the lock on cutting and joining the
/// same strings again.
struct ReplacementNames: Sendable {
  /// The file to replace (symlinks already resolved).
  let target: String
  /// Where the target and its temp files live: the directory whose `fsync` makes a rename
  /// durable.
  let directory: String
  /// The target's last path component.
  let name: String
  /// `DIRECTORY/.NAME.tmp-`: a temp file's path is this and a random suffix.
  let temporaryPathPrefix: String

  init(target: String) {
    self.target = target
    directory = FilePath.directory(of: target)
    name = FilePath.name(of: target)
    temporaryPathPrefix = FilePath.join(directory, AtomicReplace.temporaryPrefix(forName: name))
  }
}
