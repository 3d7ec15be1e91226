/// Which grammar a JSON text is read with. `Sendable`.
///
/// A file's name usually decides it: `.json` is ``strict``, `.jsonc` and `.hujson` are
/// ``jwcc``. Both read the same values; JWCC only allows more around them.
public enum JSONSyntax: Sendable, Hashable {
  /// RFC 8259 JSON exactly, as ``JSONParser`` reads it. A comment or a trailing comma is an
  /// error (``JSONParseError/Kind/comment``, ``JSONParseError/Kind/trailingComma``) whose
  /// message says how to read the file as JWCC instead.
  case strict

  /// JWCC, "JSON With Commas and Comments" (as Tailscale's hujson and VS Code's settings files
  /// write it): RFC 8259 JSON plus `//` comments to the end of the line, `/* */` block comments
  /// (which do not nest) wherever whitespace may stand, and one trailing comma after the last
  /// member of an object or the last element of an array (`[1, 2,]`, never `[,]`). `//` inside
  /// a string is part of the string. A block comment without its `*/` is
  /// ``JSONParseError/Kind/unterminatedComment`` at its `/*`. Comments are not checked for
  /// UTF-8: they are kept as bytes and never become values.
  case jwcc
}
