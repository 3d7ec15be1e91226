import Glibc

/// The status of the file at `path`, or `nil` when it does not exist (`ENOENT`, `ENOTDIR`).
///
/// - Parameters:
///   - followingSymbolicLinks: `true` for `stat(2)`, `false` for `lstat(2)`, which describes
///     a link itself.
///   - operation: how an error names the call; the C function's name by default.
/// - Throws: `SystemError` for any other failure.
/// The corresponding C functions are `stat` and `lstat`.
func fileStatus(atPath path: String, followingSymbolicLinks: Bool, operation: String? = nil) throws(SystemError) -> stat? {
  var status = stat()
  do {
    _ = try systemCall(operation ?? (followingSymbolicLinks ? "stat" : "lstat"), path: path) {
      followingSymbolicLinks ? stat(path, &status) : lstat(path, &status)
    }
  } catch where error.code == ENOENT || error.code == ENOTDIR {
    return nil
  }
  return status
}

/// Whether a status describes a directory, a symbolic link or a regular file.
extension stat {
  var isDirectory: Bool { (st_mode & S_IFMT) == S_IFDIR }
  var isSymbolicLink: Bool { (st_mode & S_IFMT) == S_IFLNK }
  var isRegularFile: Bool { (st_mode & S_IFMT) == S_IFREG }
}

/// The text a symbolic link holds (not resolved any further).
/// - Throws: `SystemError` (`EINVAL` when `path` is not a link, `ENOENT`...).
/// The corresponding C function is `readlink`.
func symbolicLinkTarget(atPath path: String) throws(SystemError) -> String {
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
func currentDirectoryPath() throws(SystemError) -> String {
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
func absolutePath(_ path: String) throws(SystemError) -> String {
  let base = path.hasPrefix("/") ? "" : try currentDirectoryPath()
  return normalizedPath(base + "/" + path)
}

/// `path`, taken as starting at `/`, with empty and `.` components and repeated or trailing
/// slashes removed.
func normalizedPath(_ path: String) -> String {
  "/" + path.split(separator: "/").filter { $0 != "." }.joined(separator: "/")
}


/// The device and inode of a directory: what an inotify watch is really attached to.
struct DirectoryIdentity: Hashable, Sendable {
  var device: UInt64
  var inode: UInt64

  init(_ status: stat) {
    device = UInt64(status.st_dev)
    inode = UInt64(status.st_ino)
  }
}

/// One name in one directory that matters for reaching a file: an event naming it there
/// may change what the path leads to.
struct WatchPoint: Hashable, Sendable {
  /// The directory, as an absolute path without symbolic links.
  var directory: String
  /// The directory's identity when the path was resolved.
  var directoryIdentity: DirectoryIdentity
  /// The entry in that directory: the file itself, a link on the way, or the first
  /// missing component.
  var name: String
  /// Whether `name` is the final file (not a link or a directory on the way to it).
  var isTarget: Bool
}

/// Resolves `path` one component at a time, as the kernel would, and lists every directory
/// entry the result depends on: each symbolic link met (in the directory holding it), the
/// final file in its real directory, or the first missing component in its nearest
/// existing ancestor. Never fails: a component that cannot be examined (missing, a loop,
/// permission refused) ends the walk there, and that entry is watched instead.
///
/// - Parameter path: an absolute path (see `absolutePath(_:)`).
func watchPoints(resolving path: String) -> [WatchPoint] {
  var points: [WatchPoint] = []
  var pending = Array(path.split(separator: "/").map(String.init).reversed())
  var resolved = "/"
  guard let root = try? fileStatus(atPath: "/", followingSymbolicLinks: false) else { return [] }
  var resolvedIdentity = DirectoryIdentity(root)
  var linksFollowed = 0

  while let component = pending.popLast() {
    if component == "." || component.isEmpty { continue }
    if component == ".." {
      resolved = FilePath.directory(of: resolved)
      guard let status = try? fileStatus(atPath: resolved, followingSymbolicLinks: false) else {
        return points
      }
      resolvedIdentity = DirectoryIdentity(status)
      continue
    }
    let candidate = FilePath.join(resolved, component)
    let point = WatchPoint(directory: resolved, directoryIdentity: resolvedIdentity,
                           name: component, isTarget: pending.isEmpty)
    let status: stat?
    do { status = try fileStatus(atPath: candidate, followingSymbolicLinks: false) } catch {
      status = nil
    }
    guard let status else {
      // Missing (or unreadable): watch for it to appear in its nearest existing ancestor.
      points.append(point)
      return points
    }
    if status.isSymbolicLink {
      points.append(WatchPoint(directory: resolved, directoryIdentity: resolvedIdentity,
                               name: component, isTarget: false))
      linksFollowed += 1
      guard linksFollowed <= 40, let target = try? symbolicLinkTarget(atPath: candidate) else {
        return points  // ELOOP or a link that vanished meanwhile: the link entry is watched.
      }
      if target.hasPrefix("/") {
        resolved = "/"
        resolvedIdentity = DirectoryIdentity(root)
      }
      pending.append(contentsOf: target.split(separator: "/").map(String.init).reversed())
      continue
    }
    if pending.isEmpty || !status.isDirectory {
      // The file itself, or a non-directory where a directory was needed (`ENOTDIR`).
      points.append(point)
      return points
    }
    resolved = candidate
    resolvedIdentity = DirectoryIdentity(status)
  }
  // The path named a directory (or `/`): nothing below it to watch for.
  return points
}
