import CCSyncSystem

extension JSONPath {
  /// Reads a path written as an RFC 6901 JSON Pointer or in dotted syntax.
  ///
  /// Text that starts with `/` is a JSON Pointer: each `/` starts a token, `~1` stands for
  /// `/` and `~0` for `~`; `/` alone is the key `""`.
  ///
  /// Any other text is dotted syntax:
  /// - `""` and `.` are the whole document; a leading `.` is otherwise ignored, as in jq
  ///   (`.server.port` is `server.port`);
  /// - keys are joined by dots: `server.port`, `servers.0.host` (`0` resolves against the
  ///   container met: an array index or an object key);
  /// - brackets hold an index that only an array resolves, `[0]`, or `[-]` for the end of an
  ///   array: `servers[0].host`, `grid[1][2]`; indexes are decimal without leading zeros;
  /// - quotes hold a key with any characters, after a dot or in brackets: `a["x.y"].b`,
  ///   `a."x.y"`, `[""]` (the empty key); inside quotes `\"` is `"` and `\\` is `\`.
  /// A bare key may hold any character except `.`, `[`, `]`, `"` and NUL.
  ///
  /// - Parameter text: the path.
  /// - Throws: ``JSONPathError/malformed(path:position:reason:)`` naming the position (in
  ///   Unicode scalars from 0) and the problem: an empty key (`a..b`, `a.`), an unterminated
  ///   bracket or quote, an index that is not a non-negative decimal (`a[x]`, `a[-1]`,
  ///   `a[01]`), an unknown escape (`~2`, `\n`), a NUL character, or text after a closing
  ///   bracket or quote that is not `.` or `[`.
  public init(parsing text: String) throws(JSONPathError) {
    var parser = Parser(text)
    if parser.scalars.first == "/" {
      self.init(try parser.parsePointer())
    } else {
      self.init(try parser.parseDotted())
    }
  }
}

/// The state of one parse: the text as Unicode scalars and the position reached.
private struct Parser {
  let text: String
  let scalars: [Unicode.Scalar]
  var position = 0

  init(_ text: String) {
    self.text = text
    self.scalars = Array(text.unicodeScalars)
  }

  var atEnd: Bool { position == scalars.count }

  func error(_ reason: String, at position: Int) -> JSONPathError {
    .malformed(path: text, position: position, reason: reason)
  }

  // MARK: JSON Pointer

  mutating func parsePointer() throws(JSONPathError) -> [JSONPath.Component] {
    var components: [JSONPath.Component] = []
    // Each loop starts on a `/`.
    while !atEnd {
      position += 1
      var token = String.UnicodeScalarView()
      while !atEnd && scalars[position] != "/" {
        let scalar = scalars[position]
        if scalar == "\0" { throw error("NUL character", at: position) }
        if scalar == "~" {
          let next = position + 1 < scalars.count ? scalars[position + 1] : nil
          switch next {
          case "0": token.append("~")
          case "1": token.append("/")
          default:
            let escape = next.map { "~" + String($0) } ?? "~"
            throw error("invalid escape '\(escape)' (only ~0 and ~1 are defined)", at: position)
          }
          position += 2
        } else {
          token.append(scalar)
          position += 1
        }
      }
      components.append(.token(String(token)))
    }
    return components
  }

  // MARK: Dotted syntax

  mutating func parseDotted() throws(JSONPathError) -> [JSONPath.Component] {
    if scalars.isEmpty || scalars == ["."] { return [] }
    var components: [JSONPath.Component] = []
    if scalars[0] == "." { position = 1 }
    if !atEnd && scalars[position] == "[" {
      components.append(try parseBracket())
    } else {
      components.append(try parseKey())
    }
    while !atEnd {
      switch scalars[position] {
      case ".":
        position += 1
        components.append(try parseKey())
      case "[":
        components.append(try parseBracket())
      default:
        throw error("expected '.' or '[' but found '\(scalars[position])'", at: position)
      }
    }
    return components
  }

  /// A bare or quoted key, at the position after a dot (or at the start).
  mutating func parseKey() throws(JSONPathError) -> JSONPath.Component {
    if !atEnd && scalars[position] == "\"" { return .token(try parseQuoted()) }
    let start = position
    var token = String.UnicodeScalarView()
    scan: while !atEnd {
      let scalar = scalars[position]
      switch scalar {
      case ".", "[": break scan
      case "]": throw error("unexpected ']'", at: position)
      case "\"": throw error("unexpected '\"' inside a key (quote the whole key)", at: position)
      case "\0": throw error("NUL character", at: position)
      default:
        token.append(scalar)
        position += 1
      }
    }
    if token.isEmpty { throw error("empty key", at: start) }
    return .token(String(token))
  }

  /// `[index]`, `[-]` or `["key"]`, at the position of the `[`.
  mutating func parseBracket() throws(JSONPathError) -> JSONPath.Component {
    let open = position
    position += 1
    if !atEnd && scalars[position] == "\"" {
      let key = try parseQuoted()
      guard !atEnd else { throw error("unterminated '['", at: open) }
      guard scalars[position] == "]" else {
        throw error("expected ']' but found '\(scalars[position])'", at: position)
      }
      position += 1
      return .token(key)
    }
    let start = position
    while !atEnd && scalars[position] != "]" {
      if scalars[position] == "\0" { throw error("NUL character", at: position) }
      position += 1
    }
    guard !atEnd else { throw error("unterminated '['", at: open) }
    let token = String(String.UnicodeScalarView(scalars[start..<position]))
    position += 1
    if token.isEmpty { throw error("empty brackets", at: open) }
    let component = JSONPath.Component.checkedIndex(token)
    guard component.arrayPosition != nil else {
      if token.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
        throw error("invalid index '\(token)' (leading zero)", at: start)
      }
      throw error("invalid index '\(token)' (expected digits, '-' or a quoted key)", at: start)
    }
    return component
  }

  /// A quoted key, at the position of the opening quote; leaves the position after the
  /// closing quote.
  mutating func parseQuoted() throws(JSONPathError) -> String {
    let open = position
    position += 1
    var token = String.UnicodeScalarView()
    while !atEnd {
      let scalar = scalars[position]
      switch scalar {
      case "\"":
        position += 1
        return String(token)
      case "\\":
        let next = position + 1 < scalars.count ? scalars[position + 1] : nil
        guard let next, next == "\"" || next == "\\" else {
          let escape = next.map { "\\" + String($0) } ?? "\\"
          throw error("invalid escape '\(escape)' (only \\\" and \\\\ are defined)", at: position)
        }
        token.append(next)
        position += 2
      case "\0":
        throw error("NUL character", at: position)
      default:
        token.append(scalar)
        position += 1
      }
    }
    throw error("unterminated quoted key", at: open)
  }
}
