import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// Parses `text`, recording an issue (instead of crashing the test process) when it fails.
fileprivate func path(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> JSONPath {
  do {
    return try JSONPath(parsing: text)
  } catch {
    Issue.record("'\(text)' did not parse: \(error)", sourceLocation: sourceLocation)
    return .root
  }
}

@Suite struct JSONPathTests {
  // MARK: Syntax

  static let validPaths: [(String, [JSONPath.Component])] = [
    ("", []),
    (".", []),
    ("a", [.token("a")]),
    (".a", [.token("a")]),
    ("server.port", [.token("server"), .token("port")]),
    (".server.port", [.token("server"), .token("port")]),
    ("servers.0.host", [.token("servers"), .token("0"), .token("host")]),
    ("servers[0].host", [.token("servers"), .index(0), .token("host")]),
    ("a[1][2]", [.token("a"), .index(1), .index(2)]),
    ("a[10]", [.token("a"), .index(10)]),
    ("[0]", [.index(0)]),
    (".[0].a", [.index(0), .token("a")]),
    ("a[-]", [.token("a"), .endOfArray]),
    ("a.-", [.token("a"), .token("-")]),
    ("a.01", [.token("a"), .token("01")]),
    (#"a["x.y"].b"#, [.token("a"), .token("x.y"), .token("b")]),
    (#"a."x.y""#, [.token("a"), .token("x.y")]),
    (#""x.y".z"#, [.token("x.y"), .token("z")]),
    (#"a["0"]"#, [.token("a"), .token("0")]),
    (#"[""]"#, [.token("")]),
    (#"a[""][""]"#, [.token("a"), .token(""), .token("")]),
    (#"["a\"b\\c"]"#, [.token(#"a"b\c"#)]),
    (#"["[x]"]"#, [.token("[x]")]),
    ("my key.x", [.token("my key"), .token("x")]),
    ("a/b.c~d", [.token("a/b"), .token("c~d")]),
    ("é.日本", [.token("é"), .token("日本")]),
    // JSON Pointer
    ("/", [.token("")]),
    ("//", [.token(""), .token("")]),
    ("/a/", [.token("a"), .token("")]),
    ("/a/b", [.token("a"), .token("b")]),
    ("/servers/0/host", [.token("servers"), .token("0"), .token("host")]),
    ("/a~1b/~0c", [.token("a/b"), .token("~c")]),
    ("/~01", [.token("~1")]),
    ("/~10", [.token("/0")]),
    ("/a.b[0]", [.token("a.b[0]")]),
    ("/-", [.token("-")]),
  ]

  @Test(arguments: validPaths)
  func parses(text: String, components: [JSONPath.Component]) throws {
    #expect(try JSONPath(parsing: text).components == components)
  }

  static let malformedPaths: [(String, String)] = [
    ("a..b", "malformed path 'a..b': empty key at position 2"),
    ("a.", "malformed path 'a.': empty key at position 2"),
    ("..", "malformed path '..': empty key at position 1"),
    ("a.[0]", "malformed path 'a.[0]': empty key at position 2"),
    ("a[", "malformed path 'a[': unterminated '[' at position 1"),
    ("a[0", "malformed path 'a[0': unterminated '[' at position 1"),
    ("a[]", "malformed path 'a[]': empty brackets at position 1"),
    ("a[x]", "malformed path 'a[x]': invalid index 'x' (expected digits, '-' or a quoted key) at position 2"),
    ("a[-1]", "malformed path 'a[-1]': invalid index '-1' (expected digits, '-' or a quoted key) at position 2"),
    ("a[01]", "malformed path 'a[01]': invalid index '01' (leading zero) at position 2"),
    ("a[ 1]", "malformed path 'a[ 1]': invalid index ' 1' (expected digits, '-' or a quoted key) at position 2"),
    (#"a["x"#, #"malformed path 'a["x': unterminated quoted key at position 2"#),
    (#"a["x""#, #"malformed path 'a["x"': unterminated '[' at position 1"#),
    (#"a["x"y]"#, #"malformed path 'a["x"y]': expected ']' but found 'y' at position 5"#),
    (#""x"#, #"malformed path '"x': unterminated quoted key at position 0"#),
    (#""x"y"#, #"malformed path '"x"y': expected '.' or '[' but found 'y' at position 3"#),
    ("a[0]b", "malformed path 'a[0]b': expected '.' or '[' but found 'b' at position 4"),
    (#"a"b"#, #"malformed path 'a"b': unexpected '"' inside a key (quote the whole key) at position 1"#),
    ("a]", "malformed path 'a]': unexpected ']' at position 1"),
    ("a\0b", "malformed path 'a\0b': NUL character at position 1"),
    ("[\"a\0\"]", "malformed path '[\"a\0\"]': NUL character at position 3"),
    (#"["\n"]"#, #"malformed path '["\n"]': invalid escape '\n' (only \" and \\ are defined) at position 2"#),
    ("/a~2", "malformed path '/a~2': invalid escape '~2' (only ~0 and ~1 are defined) at position 2"),
    ("/a~", "malformed path '/a~': invalid escape '~' (only ~0 and ~1 are defined) at position 2"),
    ("/a\0", "malformed path '/a\0': NUL character at position 2"),
    ("é..x", "malformed path 'é..x': empty key at position 2"),
  ]

  @Test(arguments: malformedPaths)
  func rejectsMalformed(text: String, message: String) {
    #expect {
      _ = try JSONPath(parsing: text)
    } throws: { error in
      guard let error = error as? JSONPathError,
        case .malformed(let path, _, _) = error
      else { return false }
      return path == text && error.description == message
    }
  }

  // MARK: Printing

  static let printed: [([JSONPath.Component], String, String)] = [
    ([], ".", ""),
    ([.token("server"), .token("port")], "server.port", "/server/port"),
    ([.token("servers"), .index(0), .token("host")], "servers[0].host", "/servers/0/host"),
    ([.token("servers"), .token("0")], "servers.0", "/servers/0"),
    ([.token("a"), .endOfArray], "a[-]", "/a/-"),
    ([.token("a"), .token("x.y"), .token("b")], #"a["x.y"].b"#, "/a/x.y/b"),
    ([.token("")], #"[""]"#, "/"),
    ([.token("a/b"), .token("~c")], "a/b.~c", "/a~1b/~0c"),
    ([.token("/x")], #"["/x"]"#, "/~1x"),
    ([.token("x"), .token("/y")], "x./y", "/x/~1y"),
    ([.token(#"say "hi" \o/"#)], #"["say \"hi\" \\o/"]"#, #"/say "hi" \o~1"#),
    ([.token("my key")], #"["my key"]"#, "/my key"),
    ([.index(1), .index(2)], "[1][2]", "/1/2"),
  ]

  @Test(arguments: printed)
  func prints(components: [JSONPath.Component], dotted: String, pointer: String) throws {
    let path = JSONPath(components)
    #expect(path.description == dotted)
    #expect(path.pointer == pointer)
    #expect(try JSONPath(parsing: dotted) == path)
    #expect(try JSONPath(parsing: pointer) == JSONPath(tokens: components.map(\.token)))
  }

  /// Random tokens made of the characters that need care read back from both printed forms.
  @Test func randomPathsReadBackFromBothForms() throws {
    var random = SeededJSONRandom(seed: 6901)
    let alphabet: [String] = [
      "a", "b", "0", "1", ".", "[", "]", "\"", "\\", "/", "~", "~0", "~1", " ", "-", "é", "\t",
      "\u{301}",  // a combining mark, which would merge with a preceding `"` or `/` into one Character
    ]
    for _ in 0..<500 {
      var components: [JSONPath.Component] = []
      for _ in 0..<Int.random(in: 0...4, using: &random) {
        switch Int.random(in: 0..<6, using: &random) {
        case 0: components.append(.index(Int.random(in: 0...12, using: &random)))
        case 1: components.append(.endOfArray)
        default:
          let length = Int.random(in: 0...4, using: &random)
          let token = (0..<length).map { _ in alphabet.randomElement(using: &random)! }.joined()
          components.append(.token(token))
        }
      }
      let path = JSONPath(components)
      #expect(try JSONPath(parsing: path.description) == path, "\(components)")
      #expect(
        try JSONPath(parsing: path.pointer) == JSONPath(tokens: components.map(\.token)),
        "\(components)")
    }
  }

  // MARK: Reading

  static let document: JSONValue = [
    "server": ["host": "localhost", "port": 8080],
    "servers": [["host": "a", "port": 1], ["host": "b", "tags": ["x", "y"]]],
    "grid": [[1, 2], [3, [4, 5]]],
    "odd keys": ["x.y": 1, "a/b": 2, "m~n": 3, "": 4, "0": "zero", "[q]": 5, #"say "hi""#: 6],
    "nothing": nil,
    "flag": true,
  ]

  static let readsTable: [(String, JSONValue?)] = [
    ("server.port", 8080),
    ("/server/port", 8080),
    (".server.host", "localhost"),
    ("servers.1.host", "b"),
    ("servers[1].tags[0]", "x"),
    ("/servers/1/tags/1", "y"),
    ("grid[1][1][0]", 4),
    ("grid.1.1.1", 5),
    ("grid[0]", [1, 2]),
    (#"["odd keys"]["x.y"]"#, 1),
    ("/odd keys/x.y", 1),
    ("/odd keys/a~1b", 2),
    ("odd keys.a/b", 2),
    ("/odd keys/m~0n", 3),
    ("/odd keys/", 4),
    (#"["odd keys"][""]"#, 4),
    ("odd keys.0", "zero"),
    (#"["odd keys"]["0"]"#, "zero"),
    (#"["odd keys"]["[q]"]"#, 5),
    (#"["odd keys"]["say \"hi\""]"#, 6),
    ("nothing", .null),
    ("flag", true),
    // Absent
    ("nothing.deeper", nil),
    ("nothing[0]", nil),
    ("missing", nil),
    ("missing.deeper.still", nil),
    ("server.missing", nil),
    ("servers.2", nil),
    ("servers[2].host", nil),
    ("servers.-", nil),
    ("servers[-]", nil),
    ("/servers/-", nil),
    ("servers.99999999999999999999999", nil),
    ("odd keys.1", nil),
  ]

  @Test(arguments: readsTable)
  func reads(text: String, expected: JSONValue?) throws {
    #expect(try JSONPathTests.document.value(at: path(text)) == expected)
  }

  @Test func rootReadsTheWholeDocument() throws {
    #expect(try JSONPathTests.document.value(at: .root) == JSONPathTests.document)
    #expect(try JSONPathTests.document.value(at: path("")) == JSONPathTests.document)
    #expect(try JSONValue(integerLiteral: 3).value(at: .root) == 3)
    #expect(try JSONValue.null.value(at: path("a")) == nil)
  }

  static let readErrorsTable: [(String, String)] = [
    ("server.port.x", "'server.port.x' goes through a number (at 'server.port')"),
    ("server.host.x", "'server.host.x' goes through a string (at 'server.host')"),
    ("flag[0]", "'flag[0]' goes through a boolean (at 'flag')"),
    ("servers.host", "'servers.host': 'host' is not an array index (at 'servers')"),
    ("servers.01", "'servers.01': '01' is not an array index (at 'servers')"),
    ("/grid/1/x/0", "'grid.1.x.0': 'x' is not an array index (at 'grid.1')"),
    ("server[0]", "'server[0]' indexes an object as an array (at 'server')"),
    ("servers[0][0]", "'servers[0][0]' indexes an object as an array (at 'servers[0]')"),
  ]

  @Test(arguments: readErrorsTable)
  func readErrors(text: String, message: String) {
    #expect {
      _ = try JSONPathTests.document.value(at: path(text))
    } throws: { error in
      (error as? JSONPathError)?.description == message
    }
  }

  @Test func goingThroughAScalarNamesThePrefix() {
    let document: JSONValue = ["server": 5]
    #expect(throws: JSONPathError.notAContainer(path: path("server.port"), at: path("server"), kind: "number")) {
      _ = try document.value(at: path("server.port"))
    }
    let error = JSONPathError.notAContainer(path: path("server.port"), at: path("server"), kind: "number")
    #expect(error.description == "'server.port' goes through a number (at 'server')")
    #expect(
      JSONPathError.notAContainer(path: path("a"), at: .root, kind: "array").description
        == "'a' goes through an array (at '.')")
  }

  // MARK: Setting

  @Test func setReplacesInPlaceAndAppendsNewKeys() throws {
    var document = JSONPathTests.document
    try document.setValue(9090, at: path("server.port"))
    try document.setValue(true, at: path("server.tls"))
    #expect(try document.value(at: path("server")) == ["host": "localhost", "port": 9090, "tls": true])
    #expect(try document.value(at: path("server"))?.objectValue?.keys == ["host", "port", "tls"])
    try document.setValue("first", at: path("aaa"))
    #expect(document.objectValue?.keys == ["server", "servers", "grid", "odd keys", "nothing", "flag", "aaa"])
  }

  static let setsTable: [(JSONValue, String, JSONValue)] = [
    // Intermediate objects, also for index-like tokens.
    ([:], "a.b.c", ["a": ["b": ["c": 1]]]),
    ([:], "a.0", ["a": ["0": 1]]),
    ([:], "/a/0/b", ["a": ["0": ["b": 1]]]),
    // Brackets and `-` create arrays.
    ([:], "a[0]", ["a": [1]]),
    ([:], "a[0][0]", ["a": [[1]]]),
    ([:], "a[-].b", ["a": [["b": 1]]]),
    ([:], "a.-", ["a": [1]]),
    ([:], "/a/-", ["a": [1]]),
    // Arrays: replace, append at count, append at `-`.
    (["a": [5, 6]], "a.0", ["a": [1, 6]]),
    (["a": [5, 6]], "a[1]", ["a": [5, 1]]),
    (["a": [5, 6]], "a.2", ["a": [5, 6, 1]]),
    (["a": [5, 6]], "a[2]", ["a": [5, 6, 1]]),
    (["a": [5, 6]], "a.-", ["a": [5, 6, 1]]),
    (["a": [5, 6]], "/a/-", ["a": [5, 6, 1]]),
    (["a": [5, 6]], "a[-]", ["a": [5, 6, 1]]),
    (["a": [5, 6]], "a.2.x", ["a": [5, 6, ["x": 1]]]),
    (["a": [[0], [3, 2]]], "a[1][0]", ["a": [[0], [1, 2]]]),
    (["a": [[0], [3, 2]]], "a[1][2]", ["a": [[0], [3, 2, 1]]]),
    (["a": [["k": 0]]], "a.0.k", ["a": [["k": 1]]]),
    // Odd keys.
    ([:], #"a["x.y"]"#, ["a": ["x.y": 1]]),
    ([:], "/a~1b/m~0n", ["a/b": ["m~n": 1]]),
    ([:], "/", ["": 1]),
    ([:], #"["a"][""]"#, ["a": ["": 1]]),
    (["-": 0], "-", ["-": 1]),
    (["a": ["-": 0]], "/a/-", ["a": ["-": 1]]),
    // Null on the way counts as absent.
    (["a": nil], "a.b", ["a": ["b": 1]]),
    (["a": nil], "a[0]", ["a": [1]]),
    (["a": [nil]], "a.0.b", ["a": [["b": 1]]]),
    (nil, "a", ["a": 1]),
    (nil, "[0]", [1]),
    // The root.
    (["a": 1], "", 1),
    ([1, 2], ".", 1),
  ]

  @Test(arguments: setsTable)
  func sets(before: JSONValue, text: String, after: JSONValue) throws {
    var document = before
    try document.setValue(1, at: path(text))
    #expect(document == after)
    if !text.contains("-") { #expect(try document.value(at: path(text)) == 1) }
  }

  static let setErrorsTable: [(JSONValue, String, String)] = [
    (["server": 5], "server.port", "'server.port' goes through a number (at 'server')"),
    (["a": ["b": "s"]], "a.b.c.d", "'a.b.c.d' goes through a string (at 'a.b')"),
    ("text", "a", "'a' goes through a string (at '.')"),
    (["a": [5, 6]], "a.3", "'a.3': index 3 is beyond the end of an array of 2 elements (at 'a')"),
    (["a": [5]], "a[7].b", "'a[7].b': index 7 is beyond the end of an array of 1 element (at 'a')"),
    ([:], "new[1]", "'new[1]': index 1 is beyond the end of an array of 0 elements (at 'new')"),
    ([:], "new.deeper[0].x[2]", "'new.deeper[0].x[2]': index 2 is beyond the end of an array of 0 elements (at 'new.deeper[0].x')"),
    (["a": [5]], "a.x", "'a.x': 'x' is not an array index (at 'a')"),
    (["a": ["b": 1]], "a[0]", "'a[0]' indexes an object as an array (at 'a')"),
    (["a": [["b": 1]]], "a[0][-]", "'a[0][-]' indexes an object as an array (at 'a[0]')"),
  ]

  /// A failed set names the problem and leaves the document exactly as it was, also when
  /// it had already created containers on the way.
  @Test(arguments: setErrorsTable)
  func setErrors(before: JSONValue, text: String, message: String) {
    var document = before
    #expect {
      try document.setValue(1, at: path(text))
    } throws: { error in
      (error as? JSONPathError)?.description == message
    }
    #expect(document == before)
    #expect(document.objectValue?.keys == before.objectValue?.keys)
  }

  // MARK: Removing

  @Test func removeReturnsTheValueAndKeepsOrder() throws {
    var document = JSONPathTests.document
    #expect(try document.removeValue(at: path("servers")) == JSONPathTests.document.objectValue?["servers"])
    #expect(document.objectValue?.keys == ["server", "grid", "odd keys", "nothing", "flag"])
    #expect(try document.removeValue(at: path("nothing")) == .null)
    #expect(document.objectValue?.keys == ["server", "grid", "odd keys", "flag"])
  }

  static let removesTable: [(String, JSONValue, JSONValue)] = [
    ("server.port", 8080, ["host": "localhost"]),
    ("/odd keys/a~1b", 2, ["x.y": 1, "m~n": 3, "": 4, "0": "zero", "[q]": 5, #"say "hi""#: 6]),
    ("odd keys.0", "zero", ["x.y": 1, "a/b": 2, "m~n": 3, "": 4, "[q]": 5, #"say "hi""#: 6]),
    (#"["odd keys"][""]"#, 4, ["x.y": 1, "a/b": 2, "m~n": 3, "0": "zero", "[q]": 5, #"say "hi""#: 6]),
    ("servers.0", ["host": "a", "port": 1], [["host": "b", "tags": ["x", "y"]]]),
    ("servers[1].tags[0]", "x", ["y"]),
    ("grid[1][1][0]", 4, [5]),
    ("grid.0", [1, 2], [[3, [4, 5]]]),
  ]

  /// Removes the value and checks the container it was in, found at the path's parent.
  @Test(arguments: removesTable)
  func removes(text: String, removed: JSONValue, container: JSONValue) throws {
    var document = JSONPathTests.document
    let target = path(text)
    #expect(try document.removeValue(at: target) == removed)
    let parent = JSONPath(Array(target.components.dropLast()))
    #expect(try document.value(at: parent) == container)
  }

  static let absentRemovesTable = [
    "missing", "missing.deeper", "nothing.x", "nothing[0]", "server.missing", "servers.2",
    "servers[2].host", "servers.-", "servers[-]", "servers.99999999999999999999999",
  ]

  @Test(arguments: absentRemovesTable)
  func removingWhatIsAbsentChangesNothing(text: String) throws {
    var document = JSONPathTests.document
    #expect(try document.removeValue(at: path(text)) == nil)
    #expect(document == JSONPathTests.document)
  }

  @Test func removeErrors() {
    var document = JSONPathTests.document
    #expect(throws: JSONPathError.cannotRemoveRoot) { try document.removeValue(at: .root) }
    #expect(JSONPathError.cannotRemoveRoot.description == "cannot remove the whole document (path '.')")
    #expect(throws: JSONPathError.notAContainer(path: path("flag.x"), at: path("flag"), kind: "boolean")) {
      try document.removeValue(at: path("flag.x"))
    }
    #expect(throws: JSONPathError.notAnIndex(path: path("grid.x"), at: path("grid"), token: "x")) {
      try document.removeValue(at: path("grid.x"))
    }
    #expect(throws: JSONPathError.notAnArray(path: path("server[0]"), at: path("server"))) {
      try document.removeValue(at: path("server[0]"))
    }
    #expect(document == JSONPathTests.document)
  }
}
