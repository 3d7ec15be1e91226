import CCSyncSystem
import Glibc

/// Path-level checks and whole-directory operations: whether something is there, private
/// temporary directories, and removing what they hold.
package enum FileTree {
  /// Whether anything is at `path`, a dangling symbolic link included. Only "no such file"
  /// (`ENOENT`) counts as nothing: any other failure (`EACCES` on a directory above,
  /// `ENOTDIR`) means something may be there.
  /// The corresponding C function is `lstat`.
  package static func exists(_ path: String) -> Bool {
    var status = stat()
    while lstat(path, &status) == -1 {
      let code = errno
      if code != EINTR { return code != ENOENT }
    }
    return true
  }

  /// Whether `path` leads to a directory (symbolic links followed); `false` when nothing is
  /// there or it cannot be looked at.
  /// The corresponding C function is `stat`.
  package static func isDirectory(_ path: String) -> Bool {
    (try? FileSystem.status(path))??.kind == .directory
  }

  /// Creates a directory no one else can enter (mode 0700) with a fresh name
  /// `PREFIX-XXXXXX` in `parent`.
  /// - Returns: its path.
  /// - Throws: `SystemError` naming the template (`ENOENT` for a missing `parent`, `EACCES`).
  /// The corresponding C function is `mkdtemp`.
  package static func makeTemporaryDirectory(
    prefix: String, in parent: String = ThisProcess.temporaryDirectory
  ) throws(SystemError) -> String {
    let pattern = parent + "/" + prefix + "-XXXXXX"
    var template = Array(pattern.utf8CString)
    guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
      throw SystemError(code: errno, operation: "create directory", path: pattern)
    }
    return String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// Removes a file (or a symbolic link, not what it leads to).
  /// - Throws: `SystemError` (`ENOENT`, `EISDIR`, `EACCES`).
  /// The corresponding C function is `unlink`.
  package static func removeFile(_ path: String) throws(SystemError) {
    try FileSystem.removeFile(path)
  }

  /// Removes an empty directory.
  /// - Throws: `SystemError` (`ENOTEMPTY` when something is in it, `ENOENT`).
  /// The corresponding C function is `rmdir`.
  package static func removeEmptyDirectory(_ path: String) throws(SystemError) {
    try FileSystem.removeEmptyDirectory(path)
  }

  /// Removes `path` and, when it is a directory, everything in it. Symbolic links are
  /// removed, never followed, even when one replaces a directory meanwhile: each directory is
  /// opened with `O_NOFOLLOW` and its entries are removed relative to it.
  /// - Throws: the first `SystemError` met (`ENOENT` when nothing is at `path`, `EACCES`);
  ///   what could be removed is removed all the same.
  /// The corresponding C functions are `unlinkat`, `openat`, `fdopendir`, `readdir` and
  /// `unlinkat` with `AT_REMOVEDIR`.
  package static func removeTree(_ path: String) throws(SystemError) {
    try removeEntry(named: path, in: AT_FDCWD, path: path)
  }

  private static func removeEntry(named name: String, in parent: Int32, path: String) throws(SystemError) {
    do {
      _ = try systemCall("remove", path: path) { unlinkat(parent, name, 0) }
      return
    } catch where error.code == EISDIR {
      // A directory: empty it first.
    }
    var firstError: SystemError?
    do {
      let directory = try systemCall("open", path: path) {
        openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
      }
      defer { close(directory) }
      for entry in try entryNames(in: directory, path: path) {
        do {
          try removeEntry(named: entry, in: directory, path: FilePath.join(path, entry))
        } catch {
          firstError = firstError ?? error
        }
      }
    } catch {
      firstError = error
    }
    do {
      _ = try systemCall("remove directory", path: path) { unlinkat(parent, name, AT_REMOVEDIR) }
    } catch {
      firstError = firstError ?? error
    }
    if let firstError { throw firstError }
  }

  /// The names in the open directory `directory`, without `.` and `..`.
  private static func entryNames(in directory: Int32, path: String) throws(SystemError) -> [String] {
    let copy = try systemCall("dup", path: path) { fcntl(directory, F_DUPFD_CLOEXEC, 0) }
    guard let stream = fdopendir(copy) else {
      let code = errno
      close(copy)
      throw SystemError(code: code, operation: "list directory", path: path)
    }
    defer { closedir(stream) }
    return FileSystem.names(in: stream)
  }
}
