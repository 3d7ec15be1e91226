/// String operations on slash-separated paths (no file system access).
package enum FilePath {
  /// Everything before the last slash: `/a/b/c.json` gives `/a/b`, `c.json` gives `.`,
  /// `/c.json` gives `/`.
  package static func directory(of path: String) -> String {
    guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "." }
    if slash == path.utf8.startIndex { return "/" }
    return String(path[..<slash])
  }

  /// Everything after the last slash.
  package static func name(of path: String) -> String {
    guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return path }
    return String(path[path.utf8.index(after: slash)...])
  }

  /// `relative` resolved against `directory`: `./a.json` and `a.json` name a file in it,
  /// `../a.json` one in its parent; an absolute `relative` is itself. `.` and `..` steps
  /// are taken out; `..` above the root stays at the root.
  package static func resolve(_ relative: String, against directory: String) -> String {
    let absolute = relative.hasPrefix("/")
    let start = absolute ? relative : join(directory, relative)
    var parts: [Substring] = []
    for part in start.split(separator: "/", omittingEmptySubsequences: true) {
      switch part {
      case ".": continue
      case "..": if !parts.isEmpty && parts.last != ".." { parts.removeLast() } else if !start.hasPrefix("/") { parts.append(part) }
      default: parts.append(part)
      }
    }
    let joined = parts.joined(separator: "/")
    return start.hasPrefix("/") ? "/" + joined : (joined.isEmpty ? "." : joined)
  }

  /// `directory/name`, without doubling a slash.
  package static func join(_ directory: String, _ name: String) -> String {
    directory.hasSuffix("/") ? directory + name : directory + "/" + name
  }
}
