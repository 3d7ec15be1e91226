import CCSyncSystem

/// Why a path could not be read, or could not be followed through a document.
///
/// Paths in the cases are the whole path the caller gave (`path`) and the prefix of it that
/// leads to the value where following stopped (`at`). The CLI reports a malformed path as a
/// usage error (exit 64) and every other case as invalid data (exit 65); a path that simply
/// leads nowhere is not an error but an absent value.
/// `Sendable`.
public enum JSONPathError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The text is not a path. `position` counts Unicode scalars from 0; `reason` names the
  /// problem and usually the offending token, as in `empty key` or `invalid index 'x'`.
  case malformed(path: String, position: Int, reason: String)

  /// The path goes through a string, number or Boolean at `at`, whose kind is `kind`.
  case notAContainer(path: JSONPath, at: JSONPath, kind: String)

  /// The path meets an array at `at` with a token that is neither an index nor `-`.
  case notAnIndex(path: JSONPath, at: JSONPath, token: String)

  /// The path has a bracketed index, such as `[0]`, where the document has an object.
  case notAnArray(path: JSONPath, at: JSONPath)

  /// A set would leave a gap: the index `token` is beyond the end of the array of `count`
  /// elements at `at`. (Setting at index `count` appends.)
  case indexOutOfRange(path: JSONPath, at: JSONPath, token: String, count: Int)

  /// A remove named the whole document, which has no container to be removed from.
  case cannotRemoveRoot

  /// A one-line message naming the path, such as
  /// `'server.port' goes through a number (at 'server')`.
  public var description: String {
    switch self {
    case .malformed(let path, let position, let reason):
      return "malformed path '\(path)': \(reason) at position \(position)"
    case .notAContainer(let path, let at, let kind):
      return "'\(path)' goes through \(JSONPathError.article(kind)) \(kind) (at '\(at)')"
    case .notAnIndex(let path, let at, let token):
      return "'\(path)': '\(token)' is not an array index (at '\(at)')"
    case .notAnArray(let path, let at):
      return "'\(path)' indexes an object as an array (at '\(at)')"
    case .indexOutOfRange(let path, let at, let token, let count):
      let elements = count == 1 ? "1 element" : "\(count) elements"
      return "'\(path)': index \(token) is beyond the end of an array of \(elements) (at '\(at)')"
    case .cannotRemoveRoot:
      return "cannot remove the whole document (path '.')"
    }
  }

  private static func article(_ kind: String) -> String {
    kind.first.map { "aeiou".contains($0) } == true ? "an" : "a"
  }
}
