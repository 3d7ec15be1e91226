import Testing
import CCSyncJSON
import CCSyncProcesses

/// `LosslessLayout`: where an edited text's top-level members lie, as the edit that wrote it
/// reports it, and the parse of another version by its changed top-level values alone, which
/// must give exactly what the whole parse gives. Also the two scans a write makes instead of a
/// parse: whether a text holds a value, and how deep the changed values nest.
@Suite struct LosslessLayoutTests {
  static let handWritten = """
    // settings, by hand
    {
        "name": "svc", // the service
        /* ports */
        "ports": [80, 443,],
        "limits": {"cpu": 1.50, "memory": "1\\u00e9"},
        "counter": 7
    }

    """

  @Test func anEditReportsTheLayoutOfTheTextItWrote() throws {
    let bytes = Array(Self.handWritten.utf8)
    let document = try LosslessJSONDocument(parsing: bytes, syntax: .jwcc)
    let original = try #require(document.value)
    let known = try #require(LosslessLayout.scan(bytes, syntax: .jwcc, document: original))
    #expect(known.memberCount == 4)
    var changed = original
    try changed.setValue(8, at: JSONPath(tokens: ["counter"]))
    try changed.setValue(["a", "b"], at: JSONPath(tokens: ["limits", "extra"]))
    for layout in [known, nil] {
      let edited = document.edited(to: changed, layout: layout)
      #expect(edited.bytes == document.bytes(updatedTo: changed), "the same text with or without the layout")
      let parsed = try #require(try LosslessJSONDocument(parsing: edited.bytes, syntax: .jwcc).value)
      #expect(edited.layout == LosslessLayout.scan(edited.bytes, syntax: .jwcc, document: parsed))
      #expect(edited.layout != nil)
    }
    // A member added or removed at the top: no layout (the next write scans).
    var added = original
    try added.setValue(true, at: JSONPath(tokens: ["new"]))
    #expect(document.edited(to: added, layout: known).layout == nil)
    let unchanged = document.edited(to: original, layout: known)
    #expect(unchanged.bytes == bytes && unchanged.layout == known, "nothing changed: the text and its layout")
  }

  /// Top-level values set to scalars are spliced in by the layout: the bytes and the layout
  /// the walk of the text gives, every other byte kept; any other change is left to the walk.
  @Test func scalarsSetAtTheTopAreSplicedIn() throws {
    let bytes = Array(Self.handWritten.utf8)
    let document = try LosslessJSONDocument(parsing: bytes, syntax: .jwcc)
    let original = try #require(document.value)
    let known = try #require(LosslessLayout.scan(bytes, syntax: .jwcc, document: original))
    let scalars: [(String, JSONValue)] = [("counter", 8), ("counter", 123_456), ("name", "s\u{E9}rvice \"x\""), ("ports", .null),
                                          ("limits", true)]
    for (key, value) in scalars {
      var changed = original
      try changed.setValue(value, at: JSONPath(tokens: [key]))
      var both = changed
      try both.setValue(9, at: JSONPath(tokens: ["counter"]))
      for target in [changed, both] {
        let spliced = try #require(known.replacingScalars(in: bytes, from: original, to: target), "\(key)")
        let walked = document.editedByWalk(to: target, layout: nil)
        #expect(spliced.bytes == walked.bytes, "\(key)")
        let parsed = try #require(try LosslessJSONDocument(parsing: spliced.bytes, syntax: .jwcc).value)
        #expect(parsed == target)
        #expect(spliced.layout == LosslessLayout.scan(spliced.bytes, syntax: .jwcc, document: parsed), "\(key)")
      }
    }
    let unchanged = try #require(known.replacingScalars(in: bytes, from: original, to: original))
    #expect(unchanged.bytes == bytes && unchanged.layout == known)
    // Not scalars, or not the same keys in order: the walk's.
    var nested = original
    try nested.setValue(2, at: JSONPath(tokens: ["limits", "cpu"]))
    var added = original
    try added.setValue(1, at: JSONPath(tokens: ["new"]))
    var removed = original
    _ = try removed.removeValue(at: JSONPath(tokens: ["name"]))
    for other in [nested, added, removed] {
      #expect(known.replacingScalars(in: bytes, from: original, to: other) == nil)
    }
    // A layout that is not this text's is not trusted.
    var counter = original
    try counter.setValue(8, at: JSONPath(tokens: ["counter"]))
    #expect(known.replacingScalars(in: Array(bytes.dropFirst(3)), from: original, to: counter) == nil)
    #expect(known.replacingScalars(in: Array(bytes.prefix(40)), from: original, to: counter) == nil)
  }

  @Test func anotherVersionIsParsedByItsChangedValues() throws {
    let bytes = Array(Self.handWritten.utf8)
    let original = try #require(try LosslessJSONDocument(parsing: bytes, syntax: .jwcc).value)
    let layout = try #require(LosslessLayout.scan(bytes, syntax: .jwcc, document: original))
    let changes: [(String, String, Bool)] = [
      ("\"counter\": 7", "\"counter\": 1234", true),
      ("[80, 443,]", "[80, /* new */ 8080, 443,]", true),
      ("\"name\": \"svc\"", "\"name\": {\"first\": \"svc\"}", true),
      ("1.50, \"memory\"", "1.5, \"memory\"", true),
      ("// the service", "// the api", false),  // a comment between members: the whole parse
      ("\"counter\"", "\"count\"", false),  // a key
      ("\"counter\": 7", "\"counter\": 7,", false),  // trailing text after the last value
      ("\"counter\": 7", "\"counter\": [7", false),  // not valid: the whole parse reports it
    ]
    for (old, new, applies) in changes {
      let text = try LosslessDocumentTests.replacing(old, with: new, in: Self.handWritten)
      let changed = Array(text.utf8)
      let result = layout.parse(changed, over: bytes, parsedAs: original, syntax: .jwcc)
      #expect((result != nil) == applies, "\(new)")
      guard let result else { continue }
      let whole = try #require(try LosslessJSONDocument(parsing: changed, syntax: .jwcc).value)
      #expect(result.document.printsIdentically(to: whole), "\(new)")
      #expect(result.layout == LosslessLayout.scan(changed, syntax: .jwcc, document: whole), "\(new)")
    }
    // In strict JSON a comment in a changed value is not read.
    let strict = Array(#"{"a": 1, "b": 2}"#.utf8)
    let strictValue = try JSONValue(parsing: strict)
    let strictLayout = try #require(LosslessLayout.scan(strict, syntax: .strict, document: strictValue))
    #expect(strictLayout.parse(Array(#"{"a": 1, "b": /**/2}"#.utf8), over: strict, parsedAs: strictValue, syntax: .strict) == nil)
    #expect(strictLayout.parse(Array(#"{"a": 1, "b": 3}"#.utf8), over: strict, parsedAs: strictValue, syntax: .strict)?.document == ["a": 1, "b": 3])
  }

  /// Random documents in random hand-written styles and random edits (those of the lossless
  /// property test): the layout an edit reports is the one a scan of its text finds, and the
  /// text parsed by way of the old layout is what the whole parse gives.
  @Test(arguments: [JSONSyntax.strict, .jwcc])
  func randomEditsReportTheirLayoutAndParseBack(syntax: JSONSyntax) throws {
    var failures = 0
    var shortcuts = 0
    for seed in 0..<1500 {
      var random = SeededJSONRandom(seed: UInt64(seed) &* 6151 &+ (syntax == .jwcc ? 1 : 0))
      var original = random.value(depth: 4)
      if case .object = original {} else { original = ["root": original, "n": 1] }
      let style = LosslessDocumentPropertyTests.Style.random(&random, syntax: syntax)
      let text = LosslessDocumentPropertyTests.write(original, style, indent: "", random: &random) + style.newline
      let bytes = Array(text.utf8)
      let document = try LosslessJSONDocument(parsing: bytes, syntax: syntax)
      let known = LosslessLayout.scan(bytes, syntax: syntax, document: original)
      let (changed, _) = LosslessDocumentPropertyTests.edit(original, random: &random)
      let edited = document.edited(to: changed, layout: known)
      if edited.bytes != document.bytes(updatedTo: changed) {
        Issue.record("seed \(seed): the layout changed the text")
        failures += 1
      }
      let whole = try LosslessJSONDocument(parsing: edited.bytes, syntax: syntax).value!
      if let layout = edited.layout, layout != LosslessLayout.scan(edited.bytes, syntax: syntax, document: whole) {
        Issue.record("seed \(seed): the reported layout is not the text's:\n\(text)\n---\n\(String(decoding: edited.bytes, as: UTF8.self))")
        failures += 1
      }
      if let known, let parsed = known.parse(edited.bytes, over: bytes, parsedAs: original, syntax: syntax) {
        shortcuts += 1
        if !parsed.document.printsIdentically(to: whole) || parsed.layout != LosslessLayout.scan(edited.bytes, syntax: syntax, document: whole) {
          Issue.record("seed \(seed): the parse by way of the layout differs:\n\(text)\n---\n\(String(decoding: edited.bytes, as: UTF8.self))")
          failures += 1
        }
      }
      if failures > 5 { return }
    }
    #expect(shortcuts > 100, "the shortcut applied \(shortcuts) times")
  }

  @Test func aTextHoldsNoValueAsItsDocumentSays() throws {
    let texts = ["", " \n\t", "// c", "// c\n", "/* a */ // b\n", "\u{FEFF}", "\u{FEFF} // c\n", "/* open", "/", "{}", "1",
                 "// c\n[]", " /* x */ null"]
    for syntax in [JSONSyntax.strict, .jwcc] {
      for text in texts {
        let bytes = Array(text.utf8)
        let expected = (try? LosslessJSONDocument(parsing: bytes, syntax: syntax))?.isEmpty ?? false
        #expect(LosslessJSONDocument.holdsNoValue(bytes, syntax: syntax) == expected, "\(syntax) '\(text)'")
      }
    }
  }

  @Test func theNestingMeasuredIsThatOfTheChangedValues() throws {
    let deep: JSONValue = [[[[["x"]]]]]
    let original: JSONValue = ["deep": deep, "flat": 1, "list": [1, 2]]
    var changed = original
    try changed.setValue(2, at: JSONPath(tokens: ["flat"]))
    #expect(changed.nestingDepth(changedFrom: original) == 1, "the deep value is the old one, not measured")
    try changed.setValue([1, [["a"]]], at: JSONPath(tokens: ["list"]))
    #expect(changed.nestingDepth(changedFrom: original) == 4)
    try changed.setValue(["b": deep], at: JSONPath(tokens: ["added"]))
    #expect(changed.nestingDepth(changedFrom: original) == 7)
    #expect(changed.nestingDepth(changedFrom: .null) == changed.nestingDepth)
    #expect(changed.nestingDepth(changedFrom: changed) == 0)
  }
}
