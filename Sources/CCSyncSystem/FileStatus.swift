import Glibc

/// What `stat(2)` says about a file, in Swift terms, so that layers above System need not
/// import Glibc. `Sendable`.
public struct FileStatus: Sendable, Equatable {
  /// The kind of file.
  public enum Kind: String, Sendable {
    case regularFile = "regular file"
    case directory
    case symbolicLink = "symbolic link"
    case fifo = "FIFO"
    case socket
    case characterDevice = "character device"
    case blockDevice = "block device"
    case unknown = "special file"
  }

  public var kind: Kind
  /// The permission bits, including set-id and sticky bits (`st_mode & 07777`).
  public var permissions: UInt32
  public var owner: UInt32
  public var group: UInt32
  public var linkCount: UInt64
  public var identity: FileIdentity

  package init(_ status: stat) {
    switch status.st_mode & S_IFMT {
    case S_IFREG: kind = .regularFile
    case S_IFDIR: kind = .directory
    case S_IFLNK: kind = .symbolicLink
    case S_IFIFO: kind = .fifo
    case S_IFSOCK: kind = .socket
    case S_IFCHR: kind = .characterDevice
    case S_IFBLK: kind = .blockDevice
    default: kind = .unknown
    }
    permissions = UInt32(status.st_mode & 0o7777)
    owner = status.st_uid
    group = status.st_gid
    linkCount = UInt64(status.st_nlink)
    identity = FileIdentity(status)
  }
}
