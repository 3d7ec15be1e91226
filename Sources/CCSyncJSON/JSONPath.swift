import CCSyncSystem

/// The address of a value inside a JSON document: a list of components leading from the root
/// down to the value, such as `servers.0.host` or the JSON Pointer `/servers/0/host`.
///
/// A component is a token, resolved against the container the path meets when it is used, as
/// RFC 6901 does: the token `0` names element 0 of an array and the member `"0"` of an object.
/// The bracket form `[0]` is stricter: it names an array element only. So `servers.0.host` and
/// `servers[0].host` both reach the host of the first server.
///
/// Two text forms read and print a path:
/// - dotted, for people: `server.port`, `servers[0].host`, `a["x.y"].b` (see
///   ``init(parsing:)`` for the grammar) — ``description`` prints it;
/// - RFC 6901 JSON Pointer: `/server/port`, `/a~1b/~0c` — ``pointer`` prints it.
///
/// The empty path is the whole document. `JSONPath` is a value type and `Sendable`.
public struct JSONPath: Sendable, Hashable, CustomStringConvertible {
  /// One step of a path: a token, and whether only an array may resolve it.
  public struct Component: Sendable, Hashable, CustomStringConvertible {
    /// The token as written, unescaped: a member key, or an array index in decimal, or `-`
    /// (the position after an array's last element, where a set appends).
    public let token: String

    /// Whether the component came from brackets (`[0]`, `[-]`) and so addresses an array
    /// element only; meeting an object there is an error rather than a lookup of key `"0"`.
    public let isIndexOnly: Bool

    /// A token resolved against the container met at run time: a key in an object, an index
    /// (or `-`) in an array.
    public init(token: String) {
      self.token = token
      self.isIndexOnly = false
    }

    private init(indexToken: String) {
      self.token = indexToken
      self.isIndexOnly = true
    }

    /// A token resolved against the container met at run time (see ``init(token:)``).
    public static func token(_ token: String) -> Component { Component(token: token) }

    /// Element `index` of an array, the bracket form `[index]`; only an array resolves it.
    /// A negative index never resolves: an array met there is an error.
    public static func index(_ index: Int) -> Component { Component(indexToken: String(index)) }

    /// The position after an array's last element, the bracket form `[-]`: setting a value
    /// there appends it; reading or removing it finds nothing.
    public static let endOfArray = Component(indexToken: "-")

    /// Creates an index-only component from a token the parser has checked (digits or `-`).
    package static func checkedIndex(_ token: String) -> Component { Component(indexToken: token) }

    /// The component in dotted syntax: `[0]` for an index, `["x.y"]` for a key that needs
    /// quoting, otherwise the bare token.
    public var description: String {
      if isIndexOnly { return "[\(token)]" }
      return JSONPath.needsQuoting(token, first: false) ? JSONPath.quoted(token) : token
    }

    /// Where this component addresses an element of an array: `nil` when the token is
    /// neither a decimal index (without leading zeros) nor `-`.
    package var arrayPosition: ArrayPosition? {
      if token == "-" { return .end }
      let utf8 = token.utf8
      guard let first = utf8.first, utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
      if first == 0x30 && utf8.count > 1 { return nil }
      // All digits: an index too large for Int lies beyond any array.
      return .index(Int(token) ?? Int.max)
    }
  }

  /// Where an array component points: at an existing or next index, or after the end (`-`).
  package enum ArrayPosition: Equatable {
    case index(Int)
    case end
  }

  /// The steps from the root to the value; empty for the whole document.
  public var components: [Component]

  /// The path of the whole document.
  public static let root = JSONPath([])

  /// Creates a path from its components.
  public init(_ components: [Component]) {
    self.components = components
  }

  /// Creates a path of plain tokens, such as the member keys of a ``JSONChangeSet`` path.
  public init(tokens: [String]) {
    self.components = tokens.map(Component.init(token:))
  }

  /// Whether this is the path of the whole document.
  public var isRoot: Bool { components.isEmpty }

  /// This path with `component` added at the end.
  public func appending(_ component: Component) -> JSONPath {
    JSONPath(components + [component])
  }

  /// The path made of the first `count` components.
  package func prefix(_ count: Int) -> JSONPath {
    JSONPath(Array(components.prefix(count)))
  }

  /// The path in dotted syntax, which ``init(parsing:)`` reads back to an equal path: `.` for
  /// the root, keys joined by dots, indexes in brackets, and keys that are empty or contain
  /// `.`, `[`, `]`, `"`, whitespace or control characters in quotes, as in `a["x.y"][0]`.
  public var description: String {
    if components.isEmpty { return "." }
    var text = ""
    for (position, component) in components.enumerated() {
      if component.isIndexOnly {
        text += "[\(component.token)]"
      } else if JSONPath.needsQuoting(component.token, first: position == 0) {
        text += JSONPath.quoted(component.token)
      } else {
        if position > 0 { text += "." }
        text += component.token
      }
    }
    return text
  }

  /// The path as an RFC 6901 JSON Pointer: `""` for the root, otherwise `/` before each
  /// token, with `~` written `~0` and `/` written `~1`. Brackets leave no trace: `a[0]` and
  /// `a.0` both print as `/a/0`.
  public var pointer: String {
    // Scalars, not characters: a combining mark after `/` must not hide the slash.
    var text = String.UnicodeScalarView()
    for component in components {
      text.append("/")
      for scalar in component.token.unicodeScalars {
        switch scalar {
        case "~": text.append(contentsOf: "~0".unicodeScalars)
        case "/": text.append(contentsOf: "~1".unicodeScalars)
        default: text.append(scalar)
        }
      }
    }
    return String(text)
  }

  /// Whether a bare token would not read back as itself in dotted syntax.
  package static func needsQuoting(_ token: String, first: Bool) -> Bool {
    if token.isEmpty { return true }
    // A leading slash would make the whole path read as a JSON Pointer.
    if first && token.unicodeScalars.first == "/" { return true }
    return token.unicodeScalars.contains { scalar in
      switch scalar {
      case ".", "[", "]", "\"": return true
      default: return scalar.properties.isWhitespace || scalar.value < 0x20 || scalar.value == 0x7F
      }
    }
  }

  /// `token` in brackets and quotes, with `"` and `\` escaped by a backslash.
  package static func quoted(_ token: String) -> String {
    var text = String.UnicodeScalarView("[\"".unicodeScalars)
    for scalar in token.unicodeScalars {
      if scalar == "\"" || scalar == "\\" { text.append("\\") }
      text.append(scalar)
    }
    text.append(contentsOf: "\"]".unicodeScalars)
    return String(text)
  }
}
