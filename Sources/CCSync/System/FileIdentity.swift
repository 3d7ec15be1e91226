import Glibc

/// What identifies one version of a file: device, inode, size, and modification and
/// status-change times. A rename-replace changes the inode; an in-place write changes size or
/// times. `Sendable`.
public struct FileIdentity: Hashable, Sendable {
  public var device: UInt64
  public var inode: UInt64
  public var size: Int64
  public var modificationTime: Timestamp
  public var statusChangeTime: Timestamp

  /// A file time with nanosecond resolution.
  public struct Timestamp: Hashable, Sendable, Comparable {
    public var seconds: Int64
    public var nanoseconds: Int64
    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
      (lhs.seconds, lhs.nanoseconds) < (rhs.seconds, rhs.nanoseconds)
    }
  }

  init(_ status: stat) {
    device = UInt64(status.st_dev)
    inode = UInt64(status.st_ino)
    size = Int64(status.st_size)
    modificationTime = Timestamp(seconds: Int64(status.st_mtim.tv_sec), nanoseconds: Int64(status.st_mtim.tv_nsec))
    statusChangeTime = Timestamp(seconds: Int64(status.st_ctim.tv_sec), nanoseconds: Int64(status.st_ctim.tv_nsec))
  }
}

/// `stat(2)` following symlinks; `nil` when the file does not exist (`ENOENT`, `ENOTDIR`).
func fileIdentity(atPath path: String) throws(SystemError) -> FileIdentity? {
  var status = stat()
  do {
    _ = try systemCall("stat", path: path) { stat(path, &status) }
  } catch where error.code == ENOENT || error.code == ENOTDIR {
    return nil
  }
  return FileIdentity(status)
}
