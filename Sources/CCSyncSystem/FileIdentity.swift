import Glibc

/// What identifies one version of a file: device, inode, size, modification and
/// status-change times.
///
/// Two equal identities mean "very probably the same bytes": a rename-replace changes the
/// inode, an in-place write changes the size or the times. Timestamps come from the kernel's
/// coarse clock (a few milliseconds), so two in-place writes of the same size within one tick
/// can share an identity; callers that were told the contents may have changed in place
/// (`FileWatchReason.contentMayChangeInPlace`) compare the bytes too. `Sendable`.
public struct FileIdentity: Hashable, Sendable, CustomStringConvertible {
  /// A point in time as the file system stores it: whole seconds since the epoch and the
  /// nanoseconds within that second.
  public struct Timestamp: Hashable, Sendable, Comparable {
    /// Seconds since 1970-01-01 00:00:00 UTC.
    public var seconds: Int64
    /// Nanoseconds within the second, 0 to 999_999_999.
    public var nanoseconds: Int64

    /// Creates a timestamp from its two parts.
    public init(seconds: Int64, nanoseconds: Int64) {
      self.seconds = seconds
      self.nanoseconds = nanoseconds
    }

    package init(_ time: timespec) {
      self.init(seconds: Int64(time.tv_sec), nanoseconds: Int64(time.tv_nsec))
    }

    /// Nanoseconds from `earlier` to this timestamp (negative when `earlier` is later).
    package func nanoseconds(since earlier: Timestamp) -> Int64 {
      (seconds - earlier.seconds) * 1_000_000_000 + (nanoseconds - earlier.nanoseconds)
    }

    /// Whether `lhs` is earlier than `rhs`.
    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
      (lhs.seconds, lhs.nanoseconds) < (rhs.seconds, rhs.nanoseconds)
    }
  }

  /// The device the file lives on (`st_dev`).
  public var device: UInt64
  /// The file's inode number on that device (`st_ino`).
  public var inode: UInt64
  /// The size in bytes (`st_size`).
  public var size: Int64
  /// When the contents last changed (`st_mtim`).
  public var modificationTime: Timestamp
  /// When the contents or the metadata last changed (`st_ctim`); a rename, chmod or write
  /// moves it, and no program can set it back.
  public var statusChangeTime: Timestamp

  /// Creates an identity from its parts.
  public init(device: UInt64, inode: UInt64, size: Int64,
              modificationTime: Timestamp, statusChangeTime: Timestamp) {
    self.device = device
    self.inode = inode
    self.size = size
    self.modificationTime = modificationTime
    self.statusChangeTime = statusChangeTime
  }

  /// The identity `stat(2)` reported.
  package init(_ status: stat) {
    self.init(device: UInt64(status.st_dev), inode: UInt64(status.st_ino),
              size: Int64(status.st_size),
              modificationTime: Timestamp(status.st_mtim),
              statusChangeTime: Timestamp(status.st_ctim))
  }

  /// Whether a later version of the file could still show this very identity when it was
  /// seen at `now`: its last change is less than `window` nanoseconds before `now` (or after
  /// it, the clock having been set back). File systems stamp times with a coarse clock (ext4
  /// before Linux 6.13 ticks every 1 to 10 ms, FAT and some network file systems every 1 or
  /// 2 s) and reuse a freed inode number at once, so a version written within the same tick,
  /// of the same size, in the inode of one replaced meanwhile, is indistinguishable by
  /// identity. Such an identity must be confirmed by content (git's "racily clean" entries).
  package func mayRecur(seenAt now: Timestamp, window: Int64) -> Bool {
    now.nanoseconds(since: statusChangeTime) < window
  }

  /// The identity as text, for diagnostics: `dev 64768 ino 1234 size 20 mtime 1700000000.5 ctime ...`.
  public var description: String {
    "dev \(device) ino \(inode) size \(size) mtime \(modificationTime.seconds).\(modificationTime.nanoseconds) ctime \(statusChangeTime.seconds).\(statusChangeTime.nanoseconds)"
  }
}

/// The identity of the file at `path`, following symbolic links.
///
/// - Returns: `nil` when the file does not exist: `ENOENT`, or `ENOTDIR` because a
///   component of the path is not a directory (a dangling link counts as missing too).
/// - Throws: `SystemError` for any other failure (`EACCES`, `ELOOP`, `EIO`...).
/// The corresponding C function is `stat`.
package func fileIdentity(atPath path: String) throws(SystemError) -> FileIdentity? {
  guard let status = try fileStatus(atPath: path, followingSymbolicLinks: true) else { return nil }
  return FileIdentity(status)
}
