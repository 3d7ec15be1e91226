import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// The error `bytes` fail to parse with, or `nil` (and a recorded issue) when they parse.
private func parseError(_ bytes: [UInt8], options: JSONParser.Options = .init(),
                        sourceLocation: SourceLocation = #_sourceLocation) -> JSONParseError? {
  #expect(throws: JSONParseError.self, sourceLocation: sourceLocation) {
    try JSONValue(parsing: bytes, options: options)
  }
}

private func parseError(_ text: String, options: JSONParser.Options = .init(),
                        sourceLocation: SourceLocation = #_sourceLocation) -> JSONParseError? {
  parseError(Array(text.utf8), options: options, sourceLocation: sourceLocation)
}

@Suite struct JSONParserTests {
  // MARK: Round trips

  /// Compact text that must print back byte for byte: member order and number spelling kept.
  @Test(arguments: [
    #"{"b":1,"a":2,"c":{"z":true,"y":false,"x":null}}"#,
    "[12345678901234567890,1.50,-0,1E+2,0.000,1e-999,-12.5e+07,0]",
    #"{"big":-98765432109876543210.000123,"exp":1E+2,"neg0":-0.0}"#,
    #"["",[],{},[[]],[{}],{"":{}}]"#,
    #"{"é":"ü","日本":"語","emoji":"😀"}"#,
    #"["a\"b\\c\nd\te\u0001f\u001f"]"#,
    "true", "false", "null", "0", #""text""#,
  ])
  func roundTripKeepsOrderAndNumberText(text: String) throws {
    let value = try JSONValue(parsing: text)
    #expect(value.formatted(.compact) == text)
  }

  @Test func numbersKeepTheirText() throws {
    let value = try JSONValue(parsing: "[12345678901234567890, 1.50, -0, 1E+2]")
    let texts = value.arrayValue?.compactMap { $0.numberValue?.text }
    #expect(texts == ["12345678901234567890", "1.50", "-0", "1E+2"])
    #expect(value == [.number(JSONNumber(text: "12345678901234567890")!), 1.5, 0, 100])
  }

  @Test func keysKeepTheirOrder() throws {
    let value = try JSONValue(parsing: #"{"zeta":1,"alpha":2,"mid":3,"beta":4}"#)
    #expect(value.objectValue?.keys == ["zeta", "alpha", "mid", "beta"])
  }

  @Test func escapesDecode() throws {
    let value = try JSONValue(parsing: #""\"\\\/\b\f\n\r\t\u0041\u00e9\u20AC\uD83D\uDE00""#)
    #expect(value == .string("\"\\/\u{8}\u{C}\n\r\tAé€😀"))
  }

  @Test func whitespaceAroundTheDocumentIsAllowed() throws {
    #expect(try JSONValue(parsing: " \t\r\n[ 1 , { \"a\" : 2 } ]\r\n ") == [1, ["a": 2]])
  }

  /// Runs of spaces of every length around the 8-byte steps whitespace is skipped in, mixed
  /// with the other whitespace, between every kind of token; a NUL or other control byte after
  /// spaces is still an error at its own column.
  @Test(arguments: 0...19)
  func whitespaceRunsOfEveryLength(length: Int) throws {
    let spaces = String(repeating: " ", count: length)
    let text = "\(spaces){\(spaces)\"a\"\(spaces):\n\(spaces)[\t\(spaces)1\r\n\(spaces),\(spaces)true\(spaces)]\(spaces)}\(spaces)\n"
    #expect(try JSONValue(parsing: text) == ["a": [1, true]])
    let bad = parseError("[1,\(spaces)\u{1}]")
    #expect(bad?.kind == .unexpectedCharacter)
    #expect(bad?.column == 4 + length)
  }

  @Test func acceptsEveryKindOfInput() throws {
    let bytes: [UInt8] = Array("[1]".utf8)
    #expect(try JSONValue(parsing: bytes) == [1])
    #expect(try JSONValue(parsing: bytes[...]) == [1])
    #expect(try JSONValue(parsing: "[1]".utf8) == [1])
    let fromRaw = try bytes.withUnsafeBytes { buffer in try JSONValue(parsing: buffer) }
    #expect(fromRaw == [1])
    // A collection without contiguous storage is copied first.
    #expect(try JSONValue(parsing: bytes.lazy.map { $0 }) == [1])
  }

  // MARK: Errors, with their place

  /// The whole description: message, line and column (1-based, columns in UTF-8 bytes).
  @Test(arguments: [
    (#"{"a": x}"#, "unexpected character 'x' at line 1, column 7"),
    // A trailing comma is named, at the comma, with how to read the text as JWCC instead.
    ("{\n  \"a\": 1,\n}", "trailing comma is not JSON; name the file .jsonc or .hujson, or pass --jsonc at line 2, column 9"),
    ("[1,\r\n 2,\r\n ]", "trailing comma is not JSON; name the file .jsonc or .hujson, or pass --jsonc at line 2, column 3"),
    ("{\"a\": 1 // note\n}", "comments are not JSON; name the file .jsonc or .hujson, or pass --jsonc at line 1, column 9"),
    (#"{"é": x}"#, "unexpected character 'x' at line 1, column 8"),
    ("[1, 2", "unterminated array starting at line 1, column 1"),
    // The innermost open container is the one named.
    ("{\"a\": [1, {\"b\": 2}", "unterminated array starting at line 1, column 7"),
    ("{\"a\": [1, {\"b\": 2", "unterminated object starting at line 1, column 11"),
    ("[\n  \"abc", "unterminated string starting at line 2, column 3"),
    ("", "empty document"),
    (" \n\t ", "empty document"),
    ("01", "invalid number '01' at line 1, column 1"),
    ("[1.]", "invalid number '1.' at line 1, column 2"),
    ("[-]", "invalid number '-' at line 1, column 2"),
    ("[1e+]", "invalid number '1e+' at line 1, column 2"),
    ("[.5]", "unexpected character '.' at line 1, column 2"),
    (#"["a\x"]"#, #"invalid escape '\x' in string at line 1, column 4"#),
    (#"["\u12G4"]"#, #"invalid escape '\u12G4' in string at line 1, column 3"#),
    ("[tru]", "unexpected character ']' at line 1, column 5"),
    ("nul", "unexpected end of input at line 1, column 4"),
    (#"{"a" 1}"#, "unexpected character '1' at line 1, column 6"),
    ("{1:2}", "unexpected character '1' at line 1, column 2"),
    ("[1 2]", "unexpected character '2' at line 1, column 4"),
    ("{} x", "trailing characters after the document at line 1, column 4"),
    ("'a'", "unexpected character ''' at line 1, column 1"),
    ("[\"a\tb\"]", "unescaped control character U+0009 in string at line 1, column 4"),
    ("[\u{1}]", "unexpected character U+0001 at line 1, column 2"),
    ("[\u{A0}]", "unexpected character '\u{A0}' (U+00A0) at line 1, column 2"),
    (#"["\uD800"]"#, #"lone surrogate '\uD800' in string (a Swift String cannot hold it) at line 1, column 3"#),
  ])
  func errorsNameTheProblemAndItsPlace(text: String, description: String) {
    #expect(parseError(text)?.description == description)
  }

  @Test func errorCarriesOffsetLineAndColumn() {
    let error = parseError("{\n  \"a\": [1,\n    @]\n}")
    #expect(error?.kind == .unexpectedCharacter)
    #expect(error?.message == "unexpected character '@'")
    #expect(error?.line == 3)
    #expect(error?.column == 5)
    #expect(error?.offset == 17)
  }

  /// A string or escape cut off by the end of the input is an unterminated string.
  @Test(arguments: [#"""#, #""abc"#, #""abc\"#, #"["\u00"#, #"{"a\"#, #""\uD83D\uDE"#,
                    #""\uD83D"#, #""\uD83D\"#, #""a\u"#])
  func truncatedStringsAreUnterminated(text: String) {
    let error = parseError(text)
    #expect(error?.kind == .unterminatedString, "\(String(describing: error))")
  }

  // MARK: What else is rejected

  @Test(arguments: ["{} x", "{}{}", "[1][2]", "1 2", "[1]]", "{}}", "\"a\"\"b\"", "true false", "0 0", "1-2"])
  func trailingCharactersAndConcatenatedDocuments(text: String) {
    #expect(parseError(text)?.kind == .trailingCharacters)
  }

  @Test func nulIsRejectedOutsideStringsAndRawInside() throws {
    let outside = parseError([0])
    #expect(outside?.description == "unexpected character U+0000 at line 1, column 1")
    #expect(parseError([UInt8(ascii: "["), UInt8(ascii: "1"), UInt8(ascii: "]"), 0])?.kind == .trailingCharacters)
    let inside = parseError([UInt8(ascii: "\""), UInt8(ascii: "a"), 0, UInt8(ascii: "\"")])
    #expect(inside?.kind == .controlCharacterInString)
    #expect(inside?.column == 3)
    // Escaped, it is fine.
    #expect(try JSONValue(parsing: #""a\u0000b""#) == .string("a\u{0}b"))
  }

  /// Every control character below U+0020 must be escaped inside a string.
  @Test(arguments: Array(UInt8(0)..<0x20))
  func unescapedControlCharactersInStrings(byte: UInt8) {
    let error = parseError([UInt8(ascii: "\""), UInt8(ascii: "x"), byte, UInt8(ascii: "\"")])
    #expect(error?.kind == .controlCharacterInString)
    #expect(error?.offset == 2)
  }

  /// Ill-formed UTF-8, inside a string (after an escape too), in a key, and outside strings;
  /// the column is that of the first bad byte.
  @Test(arguments: [
    ("overlong slash", [0xC0, 0xAF]),
    ("overlong 3-byte", [0xE0, 0x80, 0xAF]),
    ("overlong 4-byte", [0xF0, 0x80, 0x80, 0xAF]),
    ("UTF-8 surrogate", [0xED, 0xA0, 0x80]),
    ("above U+10FFFF", [0xF4, 0x90, 0x80, 0x80]),
    ("F5 lead byte", [0xF5, 0x80, 0x80, 0x80]),
    ("lone continuation", [0x80]),
    ("truncated", [0xE2, 0x82]),
    ("Latin-1", [0xE9]),
    ("FF", [0xFF]),
  ] as [(String, [UInt8])])
  func invalidUTF8IsRejected(name: String, bad: [UInt8]) {
    let quote = UInt8(ascii: "\"")
    let inString = [quote, UInt8(ascii: "a"), 0xC3, 0xA9] + bad + [quote]
    let string = parseError(inString)
    #expect(string?.kind == .invalidUTF8, "\(name)")
    #expect(string?.column == 5, "\(name): \(String(describing: string))")

    let afterEscape = [quote] + Array(#"\n"#.utf8) + bad + [quote]
    #expect(parseError(afterEscape)?.kind == .invalidUTF8, "\(name)")
    #expect(parseError(afterEscape)?.column == 4, "\(name)")

    let inKey = Array(#"{""#.utf8) + bad + Array(#"":1}"#.utf8)
    #expect(parseError(inKey)?.kind == .invalidUTF8, "\(name)")

    let outside = Array("[1, ".utf8) + bad + [UInt8(ascii: "]")]
    #expect(parseError(outside)?.kind == .invalidUTF8, "\(name)")
    #expect(parseError(outside)?.column == 5, "\(name)")
  }

  @Test func byteOrderMarkIsRejected() throws {
    let error = parseError([0xEF, 0xBB, 0xBF] + Array("{}".utf8))
    #expect(error?.kind == .byteOrderMark)
    #expect(error?.description == "byte order mark (U+FEFF) before the document at line 1, column 1")
    // Anywhere else outside a string it is an unexpected character; inside, it is text.
    #expect(parseError(Array(" ".utf8) + [0xEF, 0xBB, 0xBF] + Array("{}".utf8))?.kind == .unexpectedCharacter)
    #expect(try JSONValue(parsing: "\"\u{FEFF}\"") == .string("\u{FEFF}"))
  }

  @Test(arguments: [#""\uD800""#, #""\uDBFF""#, #""\uDC00""#, #""\uDFFF""#, #""\uD800x""#,
                    #""\uD800\u0041""#, #""\uD800\uD800""#, #""\uDE00\uD83D""#, #""\uD800\n""#,
                    #"{"\uD800":1}"#])
  func escapedLoneSurrogatesAreRejected(text: String) {
    let error = parseError(text)
    #expect(error?.kind == .loneSurrogate, "\(String(describing: error))")
  }

  // MARK: Nesting

  @Test func hundredThousandOpenBracketsFailWithoutCrashing() {
    let brackets = [UInt8](repeating: UInt8(ascii: "["), count: 100_000)
    let error = parseError(brackets)
    #expect(error?.kind == .nestingTooDeep)
    #expect(error?.description == "nesting deeper than 512 levels at line 1, column 513")
    // Without a practical limit the parser still does not recurse: the input just ends.
    let unlimited = parseError(brackets, options: .init(maximumDepth: 1_000_000))
    #expect(unlimited?.kind == .unterminatedContainer)
    let objects = [UInt8](String(repeating: #"{"a":"#, count: 100_000).utf8)
    #expect(parseError(objects)?.kind == .nestingTooDeep)
  }

  @Test(arguments: [0, 1, 2, 5, JSONParser.Options.defaultMaximumDepth])
  func depthExactlyAtTheLimitIsAccepted(limit: Int) throws {
    let options = JSONParser.Options(maximumDepth: limit)
    let arrays = String(repeating: "[", count: limit) + "1" + String(repeating: "]", count: limit)
    #expect(try JSONValue(parsing: arrays, options: options).formatted(.compact) == arrays)
    let objects = String(repeating: #"{"k":"#, count: limit) + "1" + String(repeating: "}", count: limit)
    #expect(try JSONValue(parsing: objects, options: options).formatted(.compact) == objects)

    let deeperArrays = "[" + arrays + "]"
    #expect(parseError(deeperArrays, options: options)?.kind == .nestingTooDeep)
    let deeperEmpty = String(repeating: "[", count: limit + 1) + String(repeating: "]", count: limit + 1)
    #expect(parseError(deeperEmpty, options: options)?.kind == .nestingTooDeep)
    let deeperObjects = #"{"k":"# + objects + "}"
    let error = parseError(deeperObjects, options: options)
    #expect(error?.kind == .nestingTooDeep)
    #expect(error?.offset == 5 * limit)
  }

  // MARK: Duplicate keys

  @Test func duplicateKeysKeepTheLastValueAtTheFirstPosition() throws {
    let value = try JSONValue(parsing: #"{"a":1,"b":2,"a":3,"c":{"x":1,"x":[2]},"b":4}"#)
    #expect(value.formatted(.compact) == #"{"a":3,"b":4,"c":{"x":[2]}}"#)
  }

  @Test(arguments: [3, 16, 17, 40])
  func duplicateKeysInLargeObjects(size: Int) throws {
    // Past the linear-scan limit duplicates are found through a hash set.
    let members = (0..<size).map { #""k\#($0)":\#($0)"# } + [#""k1":"last""#, #""k\#(size - 1)":true"#]
    let value = try JSONValue(parsing: "{" + members.joined(separator: ",") + "}")
    let object = try #require(value.objectValue)
    #expect(object.count == size)
    #expect(object.keys == (0..<size).map { "k\($0)" })
    #expect(object["k1"] == "last")
    #expect(object["k\(size - 1)"] == true)
    #expect(object["k0"] == 0)

    let error = parseError("{" + members.joined(separator: ",") + "}", options: .init(duplicateKeys: .reject))
    #expect(error?.kind == .duplicateKey)
    #expect(error?.message == #"duplicate key "k1""#)
  }

  @Test func rejectPolicyNamesTheKeyAndItsPlace() {
    let reject = JSONParser.Options(duplicateKeys: .reject)
    let error = parseError("{\n  \"name\": 1,\n  \"name\": 2\n}", options: reject)
    #expect(error?.kind == .duplicateKey)
    #expect(error?.description == #"duplicate key "name" at line 3, column 3"#)
    let escaped = parseError(#"{"a\nb":1,"a\u000ab":2}"#, options: reject)
    #expect(escaped?.description == #"duplicate key "a\nb" at line 1, column 11"#)
    let long = String(repeating: "x", count: 60)
    let shortened = parseError(#"{"\#(long)":1,"\#(long)":2}"#, options: reject)
    #expect(shortened?.message == "duplicate key \"\(String(repeating: "x", count: 40))...\"")
    // The same key in different objects is no duplicate.
    #expect(throws: Never.self) { try JSONValue(parsing: #"{"a":{"a":1},"b":{"a":2}}"#, options: reject) }
  }

  /// Keys repeated across many objects: small documents are read without the key cache,
  /// larger ones with it, where 600 distinct keys overflow its 256 slots and evict each other.
  /// Every key must come back exactly, in order, whichever way it was read.
  @Test(arguments: [2, 40, 400])
  func repeatedKeysReadBackExactlyWithAndWithoutTheKeyCache(objects: Int) throws {
    let keys = (0..<600).map { index -> String in
      switch index % 4 {
      case 0: return "key\(index)"
      case 1: return "k\(index)_" + String(repeating: "x", count: index % 23)  // lengths around 8-byte words
      case 2: return "clé\(index)東京"
      default: return String(index)
      }
    }
    var expected: [JSONValue] = []
    var text = "["
    for object in 0..<objects {
      let chosen = (0..<7).map { keys[(object * 37 + $0 * 101) % keys.count] }
      var members = JSONObject()
      var parts: [String] = []
      for (position, key) in chosen.enumerated() where members[key] == nil {
        members[key] = .number(JSONNumber(position))
        parts.append("\"\(key)\":\(position)")
      }
      expected.append(.object(members))
      text += (object == 0 ? "" : ",") + "{" + parts.joined(separator: ",") + "}"
    }
    text += "]"
    #expect((text.utf8.count >= 4096) == (objects >= 40), "the sizes straddle the cache's threshold")
    let value = try JSONValue(parsing: text)
    let elements = try #require(value.arrayValue)
    #expect(elements.count == expected.count)
    for (read, wanted) in zip(elements, expected) {
      #expect(read.objectValue?.keys == wanted.objectValue?.keys)
      #expect(read == wanted)
    }
  }

  @Test func keysAreComparedByBytes() throws {
    // Precomposed é and e + combining acute are different keys.
    let value = try JSONValue(parsing: "{\"\u{E9}\":1,\"e\u{301}\":2}", options: .init(duplicateKeys: .reject))
    #expect(value.objectValue?.count == 2)
  }
}
