import CCSyncSystem

/// A compiled `pattern`, `patternProperties` key or `format: regex` value: Swift's `Regex`,
/// matching by Unicode scalars as ECMA-262 with the `u` flag does, unanchored.
///
/// `@unchecked Sendable`: `Regex` is not declared `Sendable`, but it is an immutable value
/// whose lazily built program is published with an atomic compare-and-swap, and
/// ``init(_:)`` builds that program before the pattern can be shared; nothing mutates it
/// afterwards.
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
    // Builds the matching program now, before the pattern is shared between threads.
    _ = try? regex.firstMatch(in: "")
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

  /// ECMA-262's white space and line terminators, the members of its `\s` (listed one by
  /// one: Swift's regex syntax takes no range between two `\u{...}` escapes).
  static let whiteSpace = #"\t\n\u{B}\f\r \u{A0}\u{1680}\u{2000}\u{2001}\u{2002}\u{2003}\u{2004}\u{2005}\u{2006}\u{2007}\u{2008}\u{2009}\u{200A}\u{2028}\u{2029}\u{202F}\u{205F}\u{3000}\u{FEFF}"#

  /// ECMA-262 spellings Swift's syntax reads differently: `\d` and `\w` are ASCII-only in
  /// ECMA-262 (Swift's are Unicode-aware), `\s` has its own list of spaces, `\cX` is a
  /// control character; `\p{Letter}` is accepted by both.
  static func translated(_ source: String) -> String {
    guard source.contains("\\") else { return source }
    var output = ""
    var escaped = false
    var control = false
    var inClass = false
    for character in source {
      if control {
        control = false
        if let ascii = character.asciiValue, character.isLetter {
          output += "\\u{\(String(ascii % 32, radix: 16))}"
          continue
        }
        output += "\\c"
      }
      if escaped {
        escaped = false
        switch character {
        case "s": output += inClass ? whiteSpace : "[" + whiteSpace + "]"
        case "S" where !inClass: output += "[^" + whiteSpace + "]"
        case "c": control = true
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
    if control { output += "\\c" }
    return output
  }
}
