import Glibc

/// A failed system call: the `errno` it set, what was being done and to which file.
///
/// Its description reads like
/// `rename '/srv/app/.settings.json.tmp-Ab12' to '/srv/app/settings.json': Device or resource busy (errno 16)`.
/// `Sendable`.
public struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The `errno` value.
  public var code: Int32
  /// What was being done, as a verb phrase: `open`, `rename`, `fsync`.
  public var operation: String
  /// The file the operation was on, when there is one.
  public var path: String?
  /// The second file of a two-file operation (the target of a rename).
  public var secondPath: String?

  public init(code: Int32, operation: String, path: String? = nil, secondPath: String? = nil) {
    self.code = code
    self.operation = operation
    self.path = path
    self.secondPath = secondPath
  }

  /// The C library's text for the error code, e.g. `No space left on device`.
  public var reason: String {
    String(cString: strerror(code))
  }

  public var description: String {
    var text = operation
    if let path { text += " '\(path)'" }
    if let secondPath { text += " to '\(secondPath)'" }
    return text + ": \(reason) (errno \(code))"
  }

  /// Whether the error means the file or a directory on its path does not exist.
  public var isNoSuchFile: Bool { code == ENOENT }
  /// Whether the error means permission was refused.
  public var isPermissionDenied: Bool { code == EACCES || code == EPERM || code == EROFS }
  /// Whether the error means the device is full or failed (`ENOSPC`, `EDQUOT`, `EIO`).
  public var isInputOutput: Bool { code == ENOSPC || code == EDQUOT || code == EIO || code == EFBIG }
}

/// Calls `body` again while it fails with `EINTR`; otherwise throws the error it set.
/// `errno` is read before anything else can overwrite it.
@inline(__always)
package func systemCall<Result: BinaryInteger>(
  _ operation: String, path: String? = nil, secondPath: String? = nil,
  _ body: () -> Result
) throws(SystemError) -> Result {
  while true {
    let result = body()
    if result != -1 { return result }
    let code = errno
    if code != EINTR {
      throw SystemError(code: code, operation: operation, path: path, secondPath: secondPath)
    }
  }
}
