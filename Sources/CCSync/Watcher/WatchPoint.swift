import CCSyncSystem

/// The device and inode of a directory: what an inotify watch is really attached to.
struct DirectoryIdentity: Hashable, Sendable {
  var device: UInt64
  var inode: UInt64

  init(_ status: FileStatus) {
    device = status.identity.device
    inode = status.identity.inode
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
  guard let root = try? FileSystem.linkStatus("/") else { return [] }
  var resolvedIdentity = DirectoryIdentity(root)
  var linksFollowed = 0

  while let component = pending.popLast() {
    if component == "." || component.isEmpty { continue }
    if component == ".." {
      resolved = FilePath.directory(of: resolved)
      guard let status = try? FileSystem.linkStatus(resolved) else {
        return points
      }
      resolvedIdentity = DirectoryIdentity(status)
      continue
    }
    let candidate = FilePath.join(resolved, component)
    let point = WatchPoint(directory: resolved, directoryIdentity: resolvedIdentity,
                           name: component, isTarget: pending.isEmpty)
    guard let status = try? FileSystem.linkStatus(candidate) else {
      // Missing (or unreadable): watch for it to appear in its nearest existing ancestor.
      points.append(point)
      return points
    }
    if status.kind == .symbolicLink {
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
    if pending.isEmpty || status.kind != .directory {
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
