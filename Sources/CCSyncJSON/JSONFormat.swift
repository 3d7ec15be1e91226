import CCSyncSystem

/// How ``JSONValue/formatted(_:)`` lays out JSON text. `Sendable`.
///
/// Both styles write strings the same way, escaped minimally as RFC 8259 asks: `"` and `\`
/// get a backslash, control characters below U+0020 become `\n`, `\r`, `\t`, `\b`, `\f` or
/// `\u00XX` (lowercase hex), and everything else, non-ASCII included, is written as raw UTF-8;
/// `/` is not escaped. Numbers are written as their exact text. Members keep their order.
public struct JSONFormat: Sendable, Hashable {
  /// Spaces per nesting level, or `nil` for no whitespace at all.
  package let indentWidth: Int?

  /// The layout of jq and of most hand-edited config files: two spaces of indent per level,
  /// one member or element per line, `"key": value`, empty containers as `{}` and `[]`, and a
  /// final newline, so the text is a proper POSIX text file:
  /// ```
  /// {
  ///   "name": "demo",
  ///   "ports": [
  ///     80,
  ///     443
  ///   ],
  ///   "extra": {}
  /// }
  /// ```
  /// Parsing text in this layout and printing it again gives the same bytes.
  public static let pretty = JSONFormat(indentWidth: 2)

  /// No whitespace at all and no final newline: `{"name":"demo","ports":[80,443],"extra":{}}`.
  public static let compact = JSONFormat(indentWidth: nil)
}
