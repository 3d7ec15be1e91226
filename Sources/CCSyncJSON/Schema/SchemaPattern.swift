import CCSyncSystem

/// A compiled `pattern`, `patternProperties` key or `format: regex` value: Swift's `Regex`,
/// matching by Unicode scalars as ECMA-262 with the `u` flag does, unanchored.
///
/// `@unchecked Sendable`: `Regex` is not declared `Sendable`, but it is an immutable value
/// whose lazily built program is published with an atomic compare-and-swap; nothing here
/// mutates it after ``init(_:)``.
final class SchemaPattern: @unchecked Sendable {
  /// The pattern's source text, for messages.
  let source: String
  private let regex: Regex<AnyRegexOutput>
  /// The fast path for the simple patterns most schemas use, when `source` is one.
  private let simple: SchemaSimplePattern?

  /// Compiles `source`, or throws when Swift's regex syntax rejects it.
  init(_ source: String) throws {
    self.source = source
    self.regex = try Regex(SchemaPattern.translated(source)).matchingSemantics(.unicodeScalar)
    self.simple = SchemaSimplePattern(source)
  }

  /// Whether the pattern matches anywhere in `string`.
  func matches(_ string: String) -> Bool {
    if let simple { return simple.matches(string) }
    return (try? regex.firstMatch(in: string)) != nil
  }

  /// Whether Swift's `Regex` finds the pattern in `string`, bypassing the fast path (for
  /// tests that compare the two).
  func regexMatches(_ string: String) -> Bool {
    (try? regex.firstMatch(in: string)) != nil
  }

  /// Whether the fast path handles this pattern.
  var isSimple: Bool { simple != nil }

  /// ECMA-262 spellings Swift's syntax reads differently: `\d` and `\w` are ASCII-only in
  /// ECMA-262 (Swift's are Unicode-aware); `\p{Letter}` is accepted by both.
  static func translated(_ source: String) -> String {
    guard source.contains("\\") else { return source }
    var output = ""
    var escaped = false
    var inClass = false
    for character in source {
      if escaped {
        escaped = false
        switch character {
        case "d": output += inClass ? "0-9" : "[0-9]"
        case "D": output += inClass ? "\\D" : "[^0-9]"
        case "w": output += inClass ? "a-zA-Z0-9_" : "[a-zA-Z0-9_]"
        case "W": output += inClass ? "\\W" : "[^a-zA-Z0-9_]"
        default: output += "\\" + String(character)
        }
        continue
      }
      if character == "\\" { escaped = true; continue }
      if character == "[" { inClass = true } else if character == "]" { inClass = false }
      output.append(character)
    }
    if escaped { output += "\\" }
    return output
  }
}
