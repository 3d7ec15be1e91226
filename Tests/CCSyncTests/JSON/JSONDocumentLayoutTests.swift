import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// `JSONDocumentLayout`: parsing and printing by the top-level values that changed give
/// exactly what parsing and printing the whole text give, or nothing.
@Suite struct JSONDocumentLayoutTests {
  /// A random top-level object of up to eight members with varied keys.
  static func document(_ random: inout SeededJSONRandom) -> JSONValue {
    var object = JSONObject()
    for index in 0..<Int.random(in: 1...8, using: &random) {
      object[random.pick(["name", "port", "é", "a\"b", "x"]) + "\(index)"] = random.value(depth: 3)
    }
    return .object(object)
  }

  /// A random document of `seed` printed with its layout, and the generator to go on with.
  static func printed(seed: Int) throws -> (random: SeededJSONRandom, document: JSONValue, text: [UInt8], layout: JSONDocumentLayout) {
    var random = SeededJSONRandom(seed: UInt64(seed))
    let document = Self.document(&random)
    let (text, layout) = JSONDocumentLayout.print(document)
    return (random, document, text, try #require(layout))
  }

  /// Whether `layout` describes `bytes`: each value's text is what the printer makes of it.
  static func describes(_ layout: JSONDocumentLayout, _ bytes: [UInt8], _ document: JSONValue) -> Bool {
    guard case .object(let object) = document, object.count == layout.memberCount else { return false }
    for position in 0..<object.count {
      var printer = JSONPrinter(style: .pretty)
      printer.write(object[position].value, depth: 1)
      let expected = printer.withWrittenBytes(0..<printer.count) { Array($0) }
      guard Array(bytes[layout.valueStarts[position]..<layout.valueEnd(position)]) == expected else { return false }
    }
    return true
  }

  @Test(arguments: 0..<60)
  func printWithLayoutIsThePrintersText(seed: Int) throws {
    var random = SeededJSONRandom(seed: UInt64(seed))
    let document = Self.document(&random)
    let (bytes, layout) = JSONDocumentLayout.print(document)
    #expect(bytes == document.formattedBytes(.pretty))
    let found = try #require(layout)
    #expect(Self.describes(found, bytes, document))
  }

  /// Scalars, arrays and empty objects at the top level print without a layout.
  /// The nesting the printer measures is the parser's: text the printer says nests N levels
  /// parses under a limit of N and not under N - 1, printed whole or over a known version.
  @Test(arguments: [0, 1, 2, 3, 40, 511, 512, 513]) func measuredNestingIsWhatTheParserCounts(levels: Int) throws {
    var deep: JSONValue = levels == 0 ? 7 : []
    for _ in 1..<max(1, levels) { deep = [deep] }
    let whole = JSONDocumentLayout.printMeasuringNesting(deep)
    #expect(whole.nesting == levels)
    for (limit, accepted) in [(levels, true), (levels - 1, false)] where limit >= 0 {
      let parsed = try? JSONValue(parsing: whole.bytes, options: JSONParser.Options(maximumDepth: limit))
      #expect((parsed != nil) == accepted, "\(levels) levels under a limit of \(limit)")
    }
    // The same value as a member, printed over a known version whose other members stay.
    let original: JSONValue = ["a": [[1]], "b": 2]
    let (known, layout) = JSONDocumentLayout.print(original)
    let changed: JSONValue = ["a": [[1]], "b": deep]
    let over = try #require(layout?.printMeasuringNesting(changed, over: known, printedFrom: original))
    #expect(over.bytes == JSONDocumentLayout.print(changed).bytes)
    #expect(over.nesting == max(1, levels + 1))
    #expect(JSONDocumentLayout.printMeasuringNesting(changed).nesting == max(3, levels + 1))
  }

  @Test func onlyNonEmptyObjectsHaveALayout() {
    for value: JSONValue in [.null, .number(JSONNumber(1)), .array([1, 2]), .object(JSONObject())] {
      let (bytes, layout) = JSONDocumentLayout.print(value)
      #expect(bytes == value.formattedBytes(.pretty))
      #expect(layout == nil)
    }
  }

  /// Top-level values changed (one, or several; any new values, written by the printer): the
  /// shortcut parses to what the whole text parses to, with the whole text's layout.
  @Test(arguments: 0..<200)
  func parseOfOneChangedValueMatchesTheWholeParse(seed: Int) throws {
    var (random, original, known, layout) = try Self.printed(seed: seed)
    var changed = original
    guard case .object(var object) = changed else { return }
    for _ in 0..<Int.random(in: 1...2, using: &random) {
      let position = Int.random(in: 0..<object.count, using: &random)
      object.modifyValue(at: position) { $0 = random.value(depth: 3) }
    }
    changed = .object(object)
    let (bytes, expectedLayout) = JSONDocumentLayout.print(changed)

    let result = layout.parse(bytes, over: known, parsedAs: original)
    let whole = try JSONValue(parsing: bytes)
    if bytes == known {
      return  // the same text: the caller never asks
    }
    let (document, newLayout) = try #require(result, "no shortcut for a change inside values")
    #expect(document.printsIdentically(to: whole))
    #expect(newLayout == expectedLayout)
  }

  /// Two values changed (the first and the last): the shortcut parses both and gives the whole
  /// parse's document and layout. Text another writer formatted its own way: the document is
  /// still the whole parse's, but without a layout (its text is not the printer's). A changed
  /// key, a value made invalid or an added member: no shortcut.
  @Test func textTheShortcutMustNotTake() throws {
    let members: [(String, JSONValue)] = [("name", "svc"), ("ports", [1, 2]), ("counter", 7)]
    let original: JSONValue = .object(JSONObject(members))
    let (known, knownLayout) = JSONDocumentLayout.print(original)
    let layout = try #require(knownLayout)
    let text = String(decoding: known, as: UTF8.self)
    func variant(_ from: String, _ to: String) -> [UInt8] {
      let replaced = text.replacingOccurrences(of: from, with: to)
      #expect(replaced != text, "\(from) not found")
      return Array(replaced.utf8)
    }

    let twoValues = Array(String(decoding: variant("\"svc\"", "\"web\""), as: UTF8.self).replacingOccurrences(of: "7", with: "8").utf8)
    let (both, bothLayout) = try #require(layout.parse(twoValues, over: known, parsedAs: original))
    let bothWhole = try JSONValue(parsing: twoValues)
    #expect(both.printsIdentically(to: bothWhole))
    #expect(bothLayout == JSONDocumentLayout.print(bothWhole).layout)

    let compact = variant("[\n    1,\n    2\n  ]", "[1,2]")
    let (document, compactLayout) = try #require(layout.parse(compact, over: known, parsedAs: original))
    #expect(document.printsIdentically(to: try JSONValue(parsing: compact)))
    #expect(compactLayout == nil)

    let cases: [(String, [UInt8])] = [
      ("a key", variant("\"counter\"", "\"countex\"")),
      ("invalid text", variant("7", "7,")),
      ("a member added", variant("7\n}", "7,\n  \"more\": 1\n}")),
      ("a nested duplicate key parsed last-wins", variant("\"svc\"", "{\"a\": 1, \"a\": 2}")),
    ]
    for (what, bytes) in cases {
      let result = layout.parse(bytes, over: known, parsedAs: original)
      if what.hasPrefix("a nested duplicate") {
        // Valid, and parsed as the whole text is: with the same duplicate-key policy.
        let parsed = try #require(result)
        #expect(parsed.document.printsIdentically(to: try JSONValue(parsing: bytes)), "\(what)")
        #expect(layout.parse(bytes, over: known, parsedAs: original, options: .init(duplicateKeys: .reject)) == nil)
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: bytes, options: .init(duplicateKeys: .reject)) }
      } else if what == "invalid text" {
        #expect(result == nil, "\(what)")
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: bytes) }
      } else {
        #expect(result == nil, "\(what)")
      }
    }
  }

  /// Random byte edits of a printed document (bytes inserted, removed or replaced anywhere,
  /// JSON's structural characters, escapes and invalid UTF-8 among them): whenever the
  /// shortcut answers, the whole text parses to the same document, and a layout comes only
  /// with the printer's own text; when the whole text is invalid, the shortcut never answers.
  @Test func randomEditsNeverGiveAnotherAnswer() throws {
    var answered = 0
    var rejected = 0
    for seed in 0..<40 {
      try Self.checkRandomEdits(seed: seed, answered: &answered, rejected: &rejected)
    }
    // The edits exercise both sides: answers to check, and invalid texts left alone.
    #expect(answered >= 100 && rejected >= 200, "\(answered) answered, \(rejected) invalid")
  }

  static func checkRandomEdits(seed: Int, answered: inout Int, rejected: inout Int) throws {
    var (random, original, known, layout) = try Self.printed(seed: seed)
    let alphabet = Array("{}[],:\" 0123456789.-eEtrufalsn\\".utf8) + [0x0A, 0x00, 0x1F, 0x80, 0xC3, 0xA9, 0xFF]
    for _ in 0..<50 {
      var bytes = known
      for _ in 0..<Int.random(in: 1...3, using: &random) {
        let position = Int.random(in: 0...bytes.count, using: &random)
        switch Int.random(in: 0..<3, using: &random) {
        case 0: bytes.insert(random.pick(alphabet), at: position)
        case 1: if position < bytes.count { bytes.remove(at: position) }
        default: if position < bytes.count { bytes[position] = random.pick(alphabet) }
        }
      }
      guard bytes != known else { continue }
      let shortcut = layout.parse(bytes, over: known, parsedAs: original)
      let whole = Result { () throws(JSONParseError) in try JSONValue(parsing: bytes) }
      if case .failure = whole { rejected += 1 }
      switch (shortcut, whole) {
      case (nil, _):
        continue
      case (let answer?, .success(let document)):
        answered += 1
        #expect(answer.document.printsIdentically(to: document), "\(String(decoding: bytes, as: UTF8.self))")
        let (printed, printedLayout) = JSONDocumentLayout.print(document)
        if let newLayout = answer.layout {
          #expect(printed == bytes && newLayout == printedLayout, "a layout for text that is not the printer's")
        } else {
          #expect(printed != bytes, "no layout for the printer's own text")
        }
      case (_?, .failure(let error)):
        Issue.record("the shortcut accepted text the whole parse rejects (\(error)): \(String(decoding: bytes, as: UTF8.self))")
      }
    }
  }

  /// The nesting limit holds as for the whole text: a value nested to the limit parses, one
  /// level more is left to the whole parse, which rejects it.
  @Test func nestingLimitIsTheWholeTexts() throws {
    let options = JSONParser.Options(maximumDepth: 6)
    let members: [(String, JSONValue)] = [("deep", 1), ("other", 2)]
    let original: JSONValue = .object(JSONObject(members))
    let (known, knownLayout) = JSONDocumentLayout.print(original)
    let layout = try #require(knownLayout)
    for levels in 4...6 {
      let nested = String(repeating: "[", count: levels) + String(repeating: "]", count: levels)
      let bytes = Array(String(decoding: known, as: UTF8.self).replacingOccurrences(of: "\"deep\": 1", with: "\"deep\": \(nested)").utf8)
      let whole = Result { () throws(JSONParseError) in try JSONValue(parsing: bytes, options: options) }
      let shortcut = layout.parse(bytes, over: known, parsedAs: original, options: options)
      switch whole {
      case .success(let value):
        #expect(try #require(shortcut).document.printsIdentically(to: value), "\(levels) levels")
      case .failure:
        #expect(shortcut == nil, "\(levels) levels")
      }
    }
  }

  /// Printing over the known text: members that print the same keep their text; the result
  /// is the printer's, byte for byte, and so is its layout. Numbers equal in meaning but
  /// spelt otherwise (`1.50`, `1.5`) are printed as spelt.
  @Test(arguments: 0..<200)
  func printOverKnownTextMatchesTheWholePrint(seed: Int) throws {
    var (random, original, known, layout) = try Self.printed(seed: seed)
    var changed = original
    if case .object(var object) = changed {
      for position in 0..<object.count where Int.random(in: 0..<3, using: &random) == 0 {
        object.modifyValue(at: position) { value in
          if case .number(let number) = value, number.text == "1.5" {
            value = .number(JSONNumber(text: "1.50")!)
          } else {
            _ = random.mutate(&value)
          }
        }
      }
      changed = .object(object)
    }
    let (printed, printedLayout) = try #require(layout.print(changed, over: known, printedFrom: original))
    let (expected, expectedLayout) = JSONDocumentLayout.print(changed)
    #expect(printed == expected)
    #expect(printedLayout == expectedLayout)
  }

  /// Keys renamed, reordered, added or removed: no shortcut (the whole document is printed).
  @Test func printOverKnownTextNeedsTheSameKeysInOrder() throws {
    let members: [(String, JSONValue)] = [("a", 1), ("b", 2)]
    let original: JSONValue = .object(JSONObject(members))
    let (known, knownLayout) = JSONDocumentLayout.print(original)
    let layout = try #require(knownLayout)
    let variants: [[(String, JSONValue)]] = [[("b", 2), ("a", 1)], [("a", 1), ("c", 2)], [("a", 1)], [("a", 1), ("b", 2), ("c", 3)]]
    for changed in variants.map({ JSONValue.object(JSONObject($0)) }) + [.array([1])] {
      #expect(layout.print(changed, over: known, printedFrom: original) == nil)
    }
  }

  /// The common start and end of two byte strings, against a byte-by-byte count: lengths
  /// around the word, the 128-byte and the 4 KB runs, differences anywhere, equal and empty
  /// inputs.
  @Test func commonEndsMatchesACountByteByByte() {
    var random = SeededJSONRandom(seed: 7)
    func naive(_ a: [UInt8], _ b: [UInt8]) -> (Int, Int) {
      let shorter = min(a.count, b.count)
      var prefix = 0
      while prefix < shorter, a[prefix] == b[prefix] { prefix += 1 }
      var suffix = 0
      while suffix < shorter - prefix, a[a.count - suffix - 1] == b[b.count - suffix - 1] { suffix += 1 }
      return (prefix, suffix)
    }
    for length in [0, 1, 7, 8, 9, 63, 127, 128, 129, 300, 1080, 4095, 4096, 4097, 9000] {
      let a = (0..<length).map { _ in UInt8.random(in: 0...3, using: &random) }
      for _ in 0..<20 {
        var b = a
        for _ in 0..<Int.random(in: 0...2, using: &random) where !b.isEmpty {
          let position = Int.random(in: 0..<b.count, using: &random)
          switch Int.random(in: 0..<3, using: &random) {
          case 0: b[position] &+= 1
          case 1: b.remove(at: position)
          default: b.insert(9, at: position)
          }
        }
        let found = JSONDocumentLayout.commonEnds(a, b)
        let expected = naive(a, b)
        #expect(found.prefix == expected.0 && found.suffix == expected.1, "length \(length)")
      }
    }
  }

  /// `printsIdentically` is stricter than `==`: spelling and canonically equivalent strings.
  @Test func printsIdenticallyIsAboutText() {
    #expect(JSONValue.number(JSONNumber(text: "1.50")!) == .number(JSONNumber(text: "1.5")!))
    #expect(!JSONValue.number(JSONNumber(text: "1.50")!).printsIdentically(to: .number(JSONNumber(text: "1.5")!)))
    #expect(!JSONValue.string("\u{e9}").printsIdentically(to: .string("e\u{301}")))
    let members: [(String, JSONValue)] = [("a", 1), ("b", 2)]
    let object: JSONValue = .object(JSONObject(members))
    #expect(object.printsIdentically(to: object))
    #expect(!object.printsIdentically(to: .object(JSONObject(members.reversed()))))
  }
}
