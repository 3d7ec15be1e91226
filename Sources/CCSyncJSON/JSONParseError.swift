import CCSyncSystem

/// Why and where a JSON text could not be parsed.
///
/// The description is one short line that names the problem and its place, e.g.
/// `unexpected character 'x' at line 3, column 7`,
/// `unterminated string starting at line 1, column 9` or `empty document`.
///
/// Positions are 1-based. Lines are counted by line feeds (`\n`; a `\r\n` pair ends one line).
/// Columns are counted in bytes of UTF-8 from the start of the line, as compilers and most
/// editors report them: in `{"é": x}` the `x` is at column 8, not 7. ``offset`` is the 0-based
/// byte offset of the same place from the start of the input. `Sendable`.
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The kinds of problem, for callers that react to some of them differently.
  public enum Kind: Sendable, Hashable {
    /// The input is empty or only whitespace.
    case emptyDocument
    /// The input starts with a UTF-8 byte order mark, which RFC 8259 forbids.
    case byteOrderMark
    /// A byte that cannot start or continue the document at this place.
    case unexpectedCharacter
    /// The input ends in the middle of a value.
    case unexpectedEndOfInput
    /// A string has no closing quote; the position is its opening quote.
    case unterminatedString
    /// An array or object has no closing bracket; the position is its opening bracket.
    case unterminatedContainer
    /// Bytes that are not well-formed UTF-8 (including overlong forms, surrogates encoded in
    /// UTF-8 and code points above U+10FFFF).
    case invalidUTF8
    /// A byte below 0x20 inside a string; JSON requires such characters to be escaped.
    case controlCharacterInString
    /// A backslash escape that JSON does not define, or a malformed `\u` escape.
    case invalidEscape
    /// A `\u` escape for one half of a surrogate pair without the other half. A Swift
    /// `String` cannot hold it, and the parser never silently replaces data.
    case loneSurrogate
    /// Text that starts like a number but breaks the JSON number grammar (`01`, `1.`, `-`).
    case invalidNumber
    /// Arrays and objects nested deeper than ``JSONParser/Options/maximumDepth``.
    case nestingTooDeep
    /// Anything but whitespace after the end of the document.
    case trailingCharacters
    /// A key that occurs twice in one object, under ``JSONParser/DuplicateKeyPolicy/reject``.
    case duplicateKey
    /// A `//` or `/* */` comment in strict JSON; the message says how to read the text as
    /// JWCC (``JSONSyntax/jwcc``), which allows comments.
    case comment
    /// A comma after the last member or element in strict JSON; the position is the comma.
    case trailingComma
    /// A JWCC block comment without its `*/`; the position is its `/*`.
    case unterminatedComment
  }

  /// What went wrong.
  public var kind: Kind
  /// The problem without its position, e.g. `unexpected character 'x'`.
  public var message: String
  /// The 0-based byte offset of the problem in the input.
  public var offset: Int
  /// The 1-based line of the problem.
  public var line: Int
  /// The 1-based column of the problem, counted in UTF-8 bytes.
  public var column: Int

  /// Creates an error; `line` and `column` are given explicitly, for errors that did not come
  /// from a buffer (the parser computes them from the input with ``init(_:_:at:in:)``).
  public init(kind: Kind, message: String, offset: Int, line: Int, column: Int) {
    self.kind = kind
    self.message = message
    self.offset = offset
    self.line = line
    self.column = column
  }

  /// Creates an error at `offset` in `input`, counting lines and columns up to it. Only the
  /// error path pays for the count.
  package init(_ kind: Kind, _ message: String, at offset: Int, in input: UnsafeBufferPointer<UInt8>) {
    var line = 1
    var lineStart = 0
    let end = min(offset, input.count)
    var index = 0
    while index < end {
      if input[index] == UInt8(ascii: "\n") {
        line += 1
        lineStart = index + 1
      }
      index += 1
    }
    self.init(kind: kind, message: message, offset: offset, line: line, column: offset - lineStart + 1)
  }

  /// `message at line L, column C`; an empty document has no position worth giving.
  public var description: String {
    switch kind {
    case .emptyDocument:
      return message
    case .unterminatedString, .unterminatedContainer, .unterminatedComment:
      return "\(message) starting at line \(line), column \(column)"
    default:
      return "\(message) at line \(line), column \(column)"
    }
  }
}

extension JSONParseError {
  /// How a character is named in a message: `'x'` when printable ASCII, otherwise its code
  /// point, `U+0000`, with the character itself when it is printable (`'é' (U+00E9)`).
  package static func describe(scalar: Unicode.Scalar) -> String {
    let hex = String(scalar.value, radix: 16, uppercase: true)
    let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    if scalar.value >= 0x21 && scalar.value < 0x7F { return "'\(Character(scalar))'" }
    if scalar.value < 0x80 || scalar.properties.generalCategory == .control
      || scalar.properties.generalCategory == .format
    {
      return code
    }
    return "'\(Character(scalar))' (\(code))"
  }
}
