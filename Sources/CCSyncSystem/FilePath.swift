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

  /// `directory/name`, without doubling a slash.
  package static func join(_ directory: String, _ name: String) -> String {
    directory.hasSuffix("/") ? directory + name : directory + "/" + name
  }
}
