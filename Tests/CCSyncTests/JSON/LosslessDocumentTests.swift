import Testing
import CCSyncJSON

/// `LosslessJSONDocument`: a change rewrites only the bytes it touches, in the style of the
/// text around it; set-then-set-back gives the original bytes.
@Suite struct LosslessDocumentTests {
  // MARK: Helpers

  /// The document read from `text`, its value required.
  static func document(_ text: String, _ syntax: JSONSyntax = .jwcc) throws -> (LosslessJSONDocument, JSONValue) {
    let document = try LosslessJSONDocument(parsing: text, syntax: syntax)
    return (document, try #require(document.value))
  }

  /// `text` with its only occurrence of `old` replaced by `new`; fails when `old` is not there
  /// exactly once.
  static func replacing(_ old: String, with new: String, in text: String) throws -> String {
    let bytes = Array(text.utf8)
    let pattern = Array(old.utf8)
    var found: [Int] = []
    if pattern.count <= bytes.count {
      for start in 0...(bytes.count - pattern.count) where Array(bytes[start..<(start + pattern.count)]) == pattern {
        found.append(start)
      }
    }
    try #require(found.count == 1, "'\(old)' occurs \(found.count) times")
    return String(decoding: bytes[..<found[0]] + Array(new.utf8) + bytes[(found[0] + pattern.count)...], as: UTF8.self)
  }

  /// Sets the value at `path` (keys and indexes) of `value`.
  static func setting(_ new: JSONValue?, at path: [LosslessPathStep], in value: JSONValue) -> JSONValue {
    guard let step = path.first else { return new ?? .null }
    switch (value, step) {
    case (.object(var object), .key(let key)):
      if path.count == 1, new == nil {
        object.removeValue(forKey: key)
      } else {
        object[key] = setting(new, at: Array(path.dropFirst()), in: object[key] ?? .null)
      }
      return .object(object)
    case (.array(var elements), .index(let index)):
      if path.count == 1, new == nil {
        elements.remove(at: index)
      } else {
        elements[index] = setting(new, at: Array(path.dropFirst()), in: elements[index])
      }
      return .array(elements)
    default:
      return value
    }
  }

  /// The set-and-back check on one corpus file: setting `path` to `new` changes exactly the
  /// text `oldText` into `newText`; setting it back gives the original bytes.
  static func checkRoundTrip(_ text: String, _ syntax: JSONSyntax = .jwcc, path: [LosslessPathStep], new: JSONValue,
                             oldText: String, newText: String) throws {
    let (document, value) = try document(text, syntax)
    let changed = setting(new, at: path, in: value)
    let edited = document.text(updatedTo: changed)
    #expect(edited == (try replacing(oldText, with: newText, in: text)))
    let reread = try LosslessJSONDocument(parsing: edited, syntax: syntax)
    #expect(reread.value == changed)
    #expect(reread.text(updatedTo: value) == text)
    #expect(document.text(updatedTo: value) == text)
  }

  // MARK: Corpus

  static let vscodeSettings = """
    // Place your settings in this file to overwrite the default settings
    {
        // Editor
        "editor.fontSize": 14,
        "editor.fontFamily": "Fira Code, monospace", // ligatures on
        "editor.rulers": [80, 120],
        /* Files */
        "files.exclude": {
            "**/.git": true,
            "**/node_modules": true
        },
        "workbench.colorTheme": "Solarized Dark"
    }

    """

  static let packageJSON = """
    {
      "name": "demo-app",
      "version": "1.0.0",
      "private": true,
      "scripts": {
        "build": "tsc -p .",
        "test": "jest --coverage"
      },
      "dependencies": {
        "left-pad": "^1.3.0"
      },
      "engines": { "node": ">=18" }
    }

    """

  static let tsconfig = """
    {
      "compilerOptions": {
        /* Language and Environment */
        "target": "es2022",
        "lib": ["es2022", "dom",],
        // Modules
        "module": "NodeNext",
        "strict": true, // all strict checks
        "outDir": "./dist",
      },
      "include": ["src/**/*",],
    }

    """

  static let tailscalePolicy = """
    // Example/default ACLs for unrestricted connections.
    {
    \t// Define the tags which can be applied to devices and by which users.
    \t"tagOwners": {
    \t\t"tag:server": ["autogroup:admin"],
    \t},

    \t// Define access control lists for users, groups, autogroups, tags,
    \t// Tailscale IP addresses, and subnet ranges.
    \t"acls": [
    \t\t// Allow all connections.
    \t\t{"action": "accept", "src": ["*"], "dst": ["*:*"]},
    \t],

    \t"ssh": [
    \t\t{
    \t\t\t"action": "check",
    \t\t\t"src":    ["autogroup:member"],
    \t\t\t"dst":    ["autogroup:self"],
    \t\t\t"users":  ["autogroup:nonroot", "root"],
    \t\t},
    \t],
    }

    """

  static let oneLine = #"{"name":"svc","port":8080,"tags":["a","b"],"limits":{"cpu":1.50,"memory":"512Mi"}}"#

  static let crlf = "{\r\n  \"a\": 1,\r\n  \"b\": {\r\n    \"c\": true\r\n  }\r\n}\r\n"

  static let tabs = "{\n\t\"server\": {\n\t\t\"host\": \"localhost\",\n\t\t\"port\": 8080\n\t},\n\t\"debug\": false\n}\n"

  static let fourSpaces = """
    {
        "service": "billing",
        "replicas": 3,
        "resources": {
            "cpu": "500m",
            "memory": "1Gi"
        },
        "ratio": 1.50
    }

    """

  static let mixedIndent = "{\n\t\"outer\": {\n\t    \"inner\": 1,\n\t    \"other\": [1, 2]\n\t},\n  \"top\": null\n}\n"

  static let commentBeforeColon = """
    {
      "timeout" /* seconds */ : 30,
      "name": "caf\\u00e9",
      "motto": "d\\u00e9j\\u00e0 vu"
    }

    """

  @Test func vscodeSettingsSetAndBack() throws {
    try Self.checkRoundTrip(Self.vscodeSettings, path: [.key("files.exclude"), .key("**/.git")], new: false,
                            oldText: "\"**/.git\": true", newText: "\"**/.git\": false")
    try Self.checkRoundTrip(Self.vscodeSettings, path: [.key("editor.fontSize")], new: 16,
                            oldText: "14", newText: "16")
    try Self.checkRoundTrip(Self.vscodeSettings, path: [.key("editor.rulers"), .index(1)], new: 100,
                            oldText: "120", newText: "100")
  }

  @Test func packageJSONSetAndBack() throws {
    try Self.checkRoundTrip(Self.packageJSON, .strict, path: [.key("scripts"), .key("test")], new: "jest",
                            oldText: "\"jest --coverage\"", newText: "\"jest\"")
    try Self.checkRoundTrip(Self.packageJSON, .strict, path: [.key("engines"), .key("node")], new: ">=20",
                            oldText: "\">=18\"", newText: "\">=20\"")
  }

  @Test func tsconfigSetAndBack() throws {
    try Self.checkRoundTrip(Self.tsconfig, path: [.key("compilerOptions"), .key("strict")], new: false,
                            oldText: "true, //", newText: "false, //")
    try Self.checkRoundTrip(Self.tsconfig, path: [.key("compilerOptions"), .key("lib"), .index(1)], new: "webworker",
                            oldText: "\"dom\"", newText: "\"webworker\"")
  }

  @Test func tailscalePolicySetAndBack() throws {
    try Self.checkRoundTrip(Self.tailscalePolicy, path: [.key("ssh"), .index(0), .key("action")], new: "accept",
                            oldText: "\"check\"", newText: "\"accept\"")
    try Self.checkRoundTrip(Self.tailscalePolicy, path: [.key("acls"), .index(0), .key("src"), .index(0)], new: "group:dev",
                            oldText: "[\"*\"]", newText: "[\"group:dev\"]")
  }

  @Test func oneLineCRLFTabsFourSpacesMixed() throws {
    try Self.checkRoundTrip(Self.oneLine, .strict, path: [.key("limits"), .key("cpu")], new: 2,
                            oldText: "1.50", newText: "2")
    try Self.checkRoundTrip(Self.crlf, .strict, path: [.key("b"), .key("c")], new: false, oldText: "true", newText: "false")
    try Self.checkRoundTrip(Self.tabs, .strict, path: [.key("server"), .key("port")], new: 9090,
                            oldText: "8080", newText: "9090")
    try Self.checkRoundTrip(Self.fourSpaces, .strict, path: [.key("resources"), .key("memory")], new: "2Gi",
                            oldText: "\"1Gi\"", newText: "\"2Gi\"")
    try Self.checkRoundTrip(Self.mixedIndent, .strict, path: [.key("outer"), .key("other"), .index(0)], new: 7,
                            oldText: "[1, 2]", newText: "[7, 2]")
  }

  @Test func escapesAndCommentBeforeColonKept() throws {
    try Self.checkRoundTrip(Self.commentBeforeColon, path: [.key("timeout")], new: 60, oldText: "30", newText: "60")
    // The escapes of the strings that did not change stay as written.
    let (document, value) = try Self.document(Self.commentBeforeColon)
    #expect(value.objectValue?["name"] == "café")
    let edited = document.text(updatedTo: Self.setting(61, at: [.key("timeout")], in: value))
    #expect(edited.contains("\"caf\\u00e9\""))
    #expect(edited.contains("\"d\\u00e9j\\u00e0 vu\""))
  }

  @Test func unchangedValueKeepsEveryByte() throws {
    for (text, syntax) in [(Self.vscodeSettings, JSONSyntax.jwcc), (Self.tsconfig, .jwcc), (Self.tailscalePolicy, .jwcc),
                           (Self.oneLine, .strict), (Self.crlf, .strict), (Self.commentBeforeColon, .jwcc)] {
      let (document, value) = try Self.document(text, syntax)
      #expect(document.text(updatedTo: value) == text)
      // Equal by meaning but rebuilt from scratch (no shared storage): still the same bytes.
      let rebuilt = try JSONValue(parsing: value.formatted(.compact))
      #expect(document.text(updatedTo: rebuilt) == text)
    }
  }

  // MARK: Adding and removing

  @Test func addedMemberTakesNeighbourStyle() throws {
    let (fourSpaces, fourValue) = try Self.document(Self.fourSpaces, .strict)
    let added = Self.setting(["cpu": "1", "burst": true], at: [.key("limits")], in: fourValue)
    #expect(fourSpaces.text(updatedTo: added) == (try Self.replacing(
      "\"ratio\": 1.50\n", with: "\"ratio\": 1.50,\n    \"limits\": {\n        \"cpu\": \"1\",\n        \"burst\": true\n    }\n",
      in: Self.fourSpaces)))

    let (tabs, tabsValue) = try Self.document(Self.tabs, .strict)
    let tabAdded = Self.setting("0.0.0.0", at: [.key("server"), .key("bind")], in: tabsValue)
    #expect(tabs.text(updatedTo: tabAdded) == (try Self.replacing(
      "\"port\": 8080\n", with: "\"port\": 8080,\n\t\t\"bind\": \"0.0.0.0\"\n", in: Self.tabs)))

    let (crlf, crlfValue) = try Self.document(Self.crlf, .strict)
    #expect(crlf.text(updatedTo: Self.setting([1, 2], at: [.key("b"), .key("d")], in: crlfValue))
      == "{\r\n  \"a\": 1,\r\n  \"b\": {\r\n    \"c\": true,\r\n    \"d\": [\r\n      1,\r\n      2\r\n    ]\r\n  }\r\n}\r\n")

    let (oneLine, oneValue) = try Self.document(Self.oneLine, .strict)
    #expect(oneLine.text(updatedTo: Self.setting(["x": 1], at: [.key("extra")], in: oneValue))
      == Self.oneLine.dropLast() + #","extra":{"x":1}}"#)

    // A JWCC container with trailing commas gets one after the new member too; the member
    // goes after the last one's trailing comment.
    let (tsconfig, tsValue) = try Self.document(Self.tsconfig)
    #expect(tsconfig.text(updatedTo: Self.setting(true, at: [.key("compilerOptions"), .key("noEmit")], in: tsValue))
      == (try Self.replacing("\"outDir\": \"./dist\",\n", with: "\"outDir\": \"./dist\",\n    \"noEmit\": true,\n", in: Self.tsconfig)))
    let (settings, settingsValue) = try Self.document(Self.vscodeSettings)
    let withFormat = Self.setting(true, at: [.key("editor.formatOnSave")], in: settingsValue)
    #expect(settings.text(updatedTo: withFormat) == (try Self.replacing(
      "\"Solarized Dark\"\n", with: "\"Solarized Dark\",\n    \"editor.formatOnSave\": true\n", in: Self.vscodeSettings)))
  }

  @Test func addThenRemoveGivesOriginalBytes() throws {
    for (text, syntax) in [(Self.vscodeSettings, JSONSyntax.jwcc), (Self.tsconfig, .jwcc), (Self.tailscalePolicy, .jwcc),
                           (Self.oneLine, .strict), (Self.crlf, .strict), (Self.tabs, .strict), (Self.packageJSON, .strict),
                           (Self.mixedIndent, .strict)] {
      let (document, value) = try Self.document(text, syntax)
      let added = Self.setting(["new": [1, "two"]], at: [.key("zz")], in: value)
      let addedText = document.text(updatedTo: added)
      let reread = try LosslessJSONDocument(parsing: addedText, syntax: syntax)
      #expect(reread.value == added)
      #expect(reread.text(updatedTo: value) == text)
    }
  }

  @Test func removedMemberTakesItsCommentsAndComma() throws {
    let (settings, value) = try Self.document(Self.vscodeSettings)
    // The comment line above it and the comment after it on its line go with it.
    let withoutFont = Self.setting(nil, at: [.key("editor.fontFamily")], in: value)
    #expect(settings.text(updatedTo: withoutFont) == (try Self.replacing(
      "    \"editor.fontFamily\": \"Fira Code, monospace\", // ligatures on\n", with: "", in: Self.vscodeSettings)))
    let withoutFiles = Self.setting(nil, at: [.key("files.exclude")], in: value)
    #expect(settings.text(updatedTo: withoutFiles) == (try Self.replacing(
      "    /* Files */\n    \"files.exclude\": {\n        \"**/.git\": true,\n        \"**/node_modules\": true\n    },\n",
      with: "", in: Self.vscodeSettings)))
    // The last member: the one before it loses its comma.
    let withoutTheme = Self.setting(nil, at: [.key("workbench.colorTheme")], in: value)
    #expect(settings.text(updatedTo: withoutTheme) == (try Self.replacing(
      "    },\n    \"workbench.colorTheme\": \"Solarized Dark\"\n", with: "    }\n", in: Self.vscodeSettings)))
    // A blank line separates a comment from the member: the comment stays.
    let (policy, policyValue) = try Self.document(Self.tailscalePolicy)
    let withoutSSH = Self.setting(nil, at: [.key("ssh")], in: policyValue)
    let expected = try Self.replacing("\n\t\"ssh\": [\n\t\t{\n\t\t\t\"action\": \"check\",\n\t\t\t\"src\":    [\"autogroup:member\"],\n\t\t\t\"dst\":    [\"autogroup:self\"],\n\t\t\t\"users\":  [\"autogroup:nonroot\", \"root\"],\n\t\t},\n\t],\n",
                                      with: "\n", in: Self.tailscalePolicy)
    #expect(policy.text(updatedTo: withoutSSH) == expected)
    // One line: the member, its comma and the space before it.
    let (oneLine, oneValue) = try Self.document(Self.oneLine, .strict)
    #expect(oneLine.text(updatedTo: Self.setting(nil, at: [.key("port")], in: oneValue))
      == #"{"name":"svc","tags":["a","b"],"limits":{"cpu":1.50,"memory":"512Mi"}}"#)
    #expect(oneLine.text(updatedTo: Self.setting(nil, at: [.key("tags"), .index(1)], in: oneValue))
      == #"{"name":"svc","port":8080,"tags":["a"],"limits":{"cpu":1.50,"memory":"512Mi"}}"#)
    // Every member: the container is left empty.
    let (package, packageValue) = try Self.document(Self.packageJSON, .strict)
    #expect(package.text(updatedTo: Self.setting([:], at: [.key("scripts")], in: packageValue))
      == (try Self.replacing("{\n    \"build\": \"tsc -p .\",\n    \"test\": \"jest --coverage\"\n  }", with: "{}", in: Self.packageJSON)))
  }

  @Test func arrayInsertInTheMiddleAndBack() throws {
    let text = "[\n  // first\n  1,\n  // second\n  2\n]\n"
    let (document, value) = try Self.document(text)
    let inserted: JSONValue = [1, "new", 2]
    let insertedText = document.text(updatedTo: inserted)
    #expect(insertedText == "[\n  // first\n  1,\n  \"new\",\n  // second\n  2\n]\n")
    let reread = try LosslessJSONDocument(parsing: insertedText, syntax: .jwcc)
    #expect(reread.text(updatedTo: value) == text)
  }

  @Test func repeatedEscapedAndCommaFirstKeys() throws {
    // A repeated key: the last value won, so that member is the one edited; removing the key
    // removes every member with it.
    let repeated = #"{"a": 1, "b": 2, "a": 3}"#
    let (document, value) = try Self.document(repeated, .strict)
    #expect(value == ["a": 3, "b": 2])
    #expect(document.text(updatedTo: ["a": 4, "b": 2]) == #"{"a": 1, "b": 2, "a": 4}"#)
    #expect(document.text(updatedTo: ["b": 2]) == #"{"b": 2}"#)
    // The first occurrence has another kind than the value that won (found by the fuzzer).
    let (mixed, _) = try Self.document(#"{"ba": 0, "x": 1, "ba": [true, null]}"#, .strict)
    #expect(mixed.text(updatedTo: ["ba": [true], "x": 1]) == #"{"ba": 0, "x": 1, "ba": [true]}"#)
    #expect(mixed.text(updatedTo: ["ba": [true, nil, 2], "x": 1]) == #"{"ba": 0, "x": 1, "ba": [true, null, 2]}"#)
    // An escaped key is read from the text.
    let escaped = #"{"caf\u00e9": 1, "x": 2}"#
    let (escapedDocument, escapedValue) = try Self.document(escaped, .strict)
    #expect(escapedDocument.text(updatedTo: Self.setting(3, at: [.key("x")], in: escapedValue)) == #"{"caf\u00e9": 1, "x": 3}"#)
    #expect(escapedDocument.text(updatedTo: Self.setting(nil, at: [.key("café")], in: escapedValue)) == #"{"x": 2}"#)
    // Comma-first text: a member goes with the comma after it.
    let commaFirst = "{ \"a\": 1\n, \"b\": 2\n, \"c\": 3\n}\n"
    let (commaDocument, commaValue) = try Self.document(commaFirst, .strict)
    #expect(commaDocument.text(updatedTo: Self.setting(nil, at: [.key("b")], in: commaValue)) == "{ \"a\": 1\n, \"c\": 3\n}\n")
  }

  @Test func emptyContainerWithCommentsKeepsThem() throws {
    for text in ["{\n  \"plugins\": [\n    // add plugins here\n  ]\n}\n", "{\"plugins\": [ /* none */ ]}", "{\"plugins\": [// none\n]}"] {
      let (document, value) = try Self.document(text)
      let filled = document.text(updatedTo: ["plugins": ["x", 2]])
      #expect(filled.contains("none") || filled.contains("add plugins here"))
      let reread = try LosslessJSONDocument(parsing: filled, syntax: .jwcc)
      #expect(reread.value == ["plugins": ["x", 2]])
      #expect(reread.text(updatedTo: value) == text)
    }
    // A line comment on the bracket's line must not swallow the bracket (found by the fuzzer).
    let (lineComment, _) = try Self.document("[{//c\n\"B\":{}},\"\"]")
    #expect(lineComment.text(updatedTo: [[:], ""]) == "[{//c\n},\"\"]")
    let (document, _) = try Self.document("[\n  // add plugins here\n]\n")
    #expect(document.text(updatedTo: ["x"]) == "[\n  // add plugins here\n  \"x\"\n]\n")
  }

  // MARK: Comments only, empty text, byte order mark

  @Test func commentOnlyChangeIsDetectable() throws {
    let (before, beforeValue) = try Self.document(Self.vscodeSettings)
    let (after, afterValue) = try Self.document(try Self.replacing("// Editor", with: "// The editor", in: Self.vscodeSettings))
    #expect(beforeValue == afterValue)
    #expect(before.bytes != after.bytes)
    #expect(before.bytes(updatedTo: afterValue) == before.bytes)
  }

  @Test func emptyTextStartsADocument() throws {
    for text in ["", "  \n", "\n\t\n"] {
      let document = try LosslessJSONDocument(parsing: text)
      #expect(document.isEmpty)
      #expect(document.value == nil)
      #expect(document.text(updatedTo: ["a": 1]) == "{\n  \"a\": 1\n}\n")
    }
    let commented = try LosslessJSONDocument(parsing: "// settings\n", syntax: .jwcc)
    #expect(commented.isEmpty)
    #expect(commented.text(updatedTo: ["a": [true]]) == "// settings\n{\n  \"a\": [\n    true\n  ]\n}\n")
    #expect(throws: JSONParseError.self) { try LosslessJSONDocument(parsing: "// settings\n", syntax: .strict) }
  }

  @Test func byteOrderMarkIsKept() throws {
    let text = "\u{FEFF}{\"a\": 1}\n"
    let document = try LosslessJSONDocument(parsing: text, syntax: .strict)
    #expect(document.hasByteOrderMark)
    #expect(document.text(updatedTo: ["a": 2]) == "\u{FEFF}{\"a\": 2}\n")
    let error = try #require(throws: JSONParseError.self) { try LosslessJSONDocument(parsing: "\u{FEFF}{\"a\": x}") }
    #expect(error.line == 1 && error.column == 10)
  }

  @Test func kindChangeIsWrittenFresh() throws {
    let (document, value) = try Self.document(Self.fourSpaces, .strict)
    let changed = Self.setting(["a": [1, 2]], at: [.key("replicas")], in: value)
    #expect(document.text(updatedTo: changed) == (try Self.replacing(
      "\"replicas\": 3,", with: "\"replicas\": {\n        \"a\": [\n            1,\n            2\n        ]\n    },", in: Self.fourSpaces)))
  }

  // MARK: Bad input

  @Test func strictRejectsCommentsWithHint() throws {
    let error = try #require(throws: JSONParseError.self) {
      try LosslessJSONDocument(parsing: "{\n  \"a\": 1, // one\n  \"b\": 2\n}", syntax: .strict)
    }
    #expect(error.kind == .comment)
    #expect(error.line == 2 && error.column == 11)
    #expect(error.description.contains("--jsonc"))
    #expect(error.description.contains(".jsonc"))
    let block = try #require(throws: JSONParseError.self) { try JSONValue(parsing: "/* x */ 1") }
    #expect(block.kind == .comment && block.line == 1 && block.column == 1)
  }

  @Test func strictRejectsTrailingCommas() throws {
    let object = try #require(throws: JSONParseError.self) {
      try LosslessJSONDocument(parsing: "{\n  \"a\": 1,\n}", syntax: .strict)
    }
    #expect(object.kind == .trailingComma)
    #expect(object.line == 2 && object.column == 9)
    let array = try #require(throws: JSONParseError.self) { try JSONValue(parsing: "[1, 2 , ]") }
    #expect(array.kind == .trailingComma && array.column == 7)
    #expect(array.description.contains("--jsonc"))
  }

  @Test func jwccErrors() throws {
    let unterminated = try #require(throws: JSONParseError.self) {
      try LosslessJSONDocument(parsing: "{\n  \"a\": 1 /* open\n}", syntax: .jwcc)
    }
    #expect(unterminated.kind == .unterminatedComment)
    #expect(unterminated.line == 2 && unterminated.column == 10)
    #expect(unterminated.description == "unterminated block comment starting at line 2, column 10")
    for bad in ["[,]", "[1,,]", "{,}", "{\"a\":1,,}", "[1] /", "/"] {
      #expect(throws: JSONParseError.self) { try LosslessJSONDocument(parsing: bad, syntax: .jwcc) }
    }
    // `//` in a string is the string's.
    let (_, value) = try Self.document(#"{"url": "http://example.com/*x*/"} // comment"#)
    #expect(value.objectValue?["url"] == "http://example.com/*x*/")
    let (_, trailing) = try Self.document("[1, 2, /* c */ ]")
    #expect(trailing == [1, 2])
  }
}

/// One step of a path in these tests: a member's key or an element's index.
enum LosslessPathStep: Hashable {
  case key(String)
  case index(Int)
}
