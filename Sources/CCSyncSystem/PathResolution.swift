import Glibc

/// The status of the file at `path`, or `nil` when it does not exist (`ENOENT`, `ENOTDIR`).
///
/// - Parameters:
///   - followingSymbolicLinks: `true` for `stat(2)`, `false` for `lstat(2)`, which describes
///     a link itself.
///   - operation: how an error names the call; the C function's name by default.
/// - Throws: `SystemError` for any other failure.
/// The corresponding C functions are `stat` and `lstat`.
package func fileStatus(atPath path: String, followingSymbolicLinks: Bool, operation: String? = nil) throws(SystemError) -> stat? {
  var status = stat()
  do {
    _ = try systemCall(operation ?? (followingSymbolicLinks ? "stat" : "lstat"), path: path) {
      path.withCString { followingSymbolicLinks ? stat($0, &status) : lstat($0, &status) }
    }
  } catch where error.code == ENOENT || error.code == ENOTDIR {
    return nil
  }
  return status
}

/// Whether a status describes a directory, a symbolic link or a regular file.
extension stat {
  package var isDirectory: Bool { (st_mode & S_IFMT) == S_IFDIR }
  package var isSymbolicLink: Bool { (st_mode & S_IFMT) == S_IFLNK }
  package var isRegularFile: Bool { (st_mode & S_IFMT) == S_IFREG }
}

/// The text a symbolic link holds (not resolved any further).
/// - Throws: `SystemError` (`EINVAL` when `path` is not a link, `ENOENT`...).
/// The corresponding C function is `readlink`.
package func symbolicLinkTarget(atPath path: String) throws(SystemError) -> String {
  var capacity = 256
  while true {
    var buffer = [UInt8](repeating: 0, count: capacity)
    let count = try systemCall("readlink", path: path) {
      buffer.withUnsafeMutableBufferPointer { pointer in
        pointer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: capacity) {
          readlink(path, $0, capacity)
        }
      }
    }
    // A result that fills the buffer may have been cut short: try again, larger.
    if count < capacity { return String(decoding: buffer[..<count], as: UTF8.self) }
    capacity *= 4
  }
}

/// The process's current working directory.
/// The corresponding C function is `getcwd`.
package func currentDirectoryPath() throws(SystemError) -> String {
  var capacity = Int(PATH_MAX)
  while true {
    var buffer = [CChar](repeating: 0, count: capacity)
    if getcwd(&buffer, capacity) != nil {
      return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
    let code = errno
    if code != ERANGE { throw SystemError(code: code, operation: "getcwd") }
    capacity *= 2
  }
}

/// `path` made absolute against the current directory, with empty and `.` components and
/// repeated or trailing slashes removed. `..` is kept: it can only be resolved once the
/// symbolic links before it are known.
/// - Throws: `SystemError` for a relative `path` when the current directory has no path
///   (`ENOENT`: it was removed), rather than taking another directory for it.
package func absolutePath(_ path: String) throws(SystemError) -> String {
  let base = path.hasPrefix("/") ? "" : try currentDirectoryPath()
  return normalizedPath(base + "/" + path)
}

/// `path`, taken as starting at `/`, with empty and `.` components and repeated or trailing
/// slashes removed.
package func normalizedPath(_ path: String) -> String {
  "/" + path.split(separator: "/").filter { $0 != "." }.joined(separator: "/")
}
