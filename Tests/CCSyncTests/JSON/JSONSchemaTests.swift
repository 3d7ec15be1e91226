import Testing
@testable import CCSyncJSON

@Suite struct JSONSchemaTests {
  func schema(_ text: String, options: JSONSchema.Options = .init()) throws -> JSONSchema {
    try JSONSchema(JSONValue(parsing: text), options: options)
  }

  func compileError(_ text: String) throws -> JSONSchemaError? {
    let value = try JSONValue(parsing: text)
    return #expect(throws: JSONSchemaError.self) { try JSONSchema(value) }
  }

  static let serverSchema = #"""
    {
      "type": "object",
      "required": ["server"],
      "properties": {
        "server": {
          "type": "object",
          "required": ["host", "port"],
          "additionalProperties": false,
          "properties": {
            "host": {"type": "string", "pattern": "^[a-z0-9.-]+$", "minLength": 1},
            "port": {"type": "integer", "minimum": 1, "maximum": 65535}
          }
        },
        "mode": {"enum": ["fast", "safe"]}
      }
    }
    """#

  // MARK: Failures

  @Test func failureNamesPointerKeywordAndExpectation() throws {
    let schema = try schema(Self.serverSchema)
    let failures = schema.validate(try JSONValue(parsing: #"{"server": {"host": "db", "port": 8080.5}}"#))
    #expect(failures.map(\.description) == ["/server/port: 8080.5 is not an integer (type)"])
    let failure = try #require(failures.first)
    #expect(failure.instanceLocation == "/server/port")
    #expect(failure.keyword == "type")
    #expect(failure.schemaLocation == "#/properties/server/properties/port/type")
    #expect(failure.message == "8080.5 is not an integer")
  }

  @Test func everyFailureIsReportedInDocumentOrder() throws {
    let schema = try schema(Self.serverSchema)
    let instance = try JSONValue(parsing: #"{"server": {"host": "DB!", "port": 70000, "tls": true}, "mode": "slow"}"#)
    #expect(schema.validate(instance).map(\.description) == [
      #"/server/host: "DB!" does not match the pattern ^[a-z0-9.-]+$ (pattern)"#,
      "/server/port: 70000 is greater than the maximum 65535 (maximum)",
      #"/server/tls: property "tls" is not allowed (additionalProperties)"#,
      #"/mode: "slow" is not one of ["fast","safe"] (enum)"#,
    ])
    #expect(!schema.isValid(instance))
  }

  @Test func missingRequiredMembersAreReportedAtTheObject() throws {
    let schema = try schema(Self.serverSchema)
    #expect(schema.validate(try JSONValue(parsing: "{}")).map(\.description) == [
      #"(root): required property "server" is missing (required)"#
    ])
    #expect(schema.validate(try JSONValue(parsing: #"{"server": {}}"#)).map(\.description) == [
      #"/server: required property "host" is missing (required)"#,
      #"/server: required property "port" is missing (required)"#,
    ])
  }

  @Test func combinatorsReportOneFailureNotTheirBranches() throws {
    let schema = try schema(#"{"properties": {"a": {"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 10}]}, "b": {"oneOf": [{"type": "number"}, {"type": "integer"}]}}}"#)
    let failures = schema.validate(try JSONValue(parsing: #"{"a": 3, "b": 2}"#))
    #expect(failures.map(\.description) == [
      "/a: 3 matches none of the 2 schemas in anyOf (anyOf)",
      "/b: 2 matches 2 of the schemas in oneOf (0 and 1); exactly one must (oneOf)",
    ])
    #expect(failures.map(\.schemaLocation) == ["#/properties/a/anyOf", "#/properties/b/oneOf"])
  }

  @Test func unevaluatedMembersAndItemsAreNamed() throws {
    let schema = try schema(##"""
      {"allOf": [{"properties": {"name": {"type": "string"}}}], "unevaluatedProperties": false,
       "properties": {"list": {"prefixItems": [{"type": "integer"}], "unevaluatedItems": false}}}
      """##)
    #expect(schema.validate(try JSONValue(parsing: #"{"name": "a", "list": [1, 2], "extra": true}"#)).map(\.description) == [
      "/list/1: item 1 is not allowed (unevaluatedItems)",
      #"/extra: property "extra" is not allowed (unevaluatedProperties)"#,
    ])
    #expect(schema.isValid(try JSONValue(parsing: #"{"name": "a", "list": [1]}"#)))
  }

  @Test func pointersEscapeSlashAndTilde() throws {
    let schema = try schema(#"{"additionalProperties": {"type": "string"}}"#)
    #expect(schema.validate(try JSONValue(parsing: #"{"a/b~c": 1}"#)).map(\.instanceLocation) == ["/a~1b~0c"])
  }

  @Test func validAndInvalidAgreeBetweenValidateAndIsValid() throws {
    let schema = try schema(Self.serverSchema)
    let good = try JSONValue(parsing: #"{"server": {"host": "db.local", "port": 5432}, "mode": "safe"}"#)
    #expect(schema.validate(good).isEmpty)
    #expect(schema.isValid(good))
  }

  /// One compiled schema, its patterns included, shared by tasks validating at once (run
  /// under ThreadSanitizer by scripts/tsan).
  @Test func oneSchemaValidatesOnManyThreadsAtOnce() async throws {
    let schema = try schema(Self.serverSchema)
    let good = try JSONValue(parsing: #"{"server": {"host": "db.local", "port": 5432}}"#)
    let bad = try JSONValue(parsing: #"{"server": {"host": "DB!", "port": 0}}"#)
    let expected = schema.validate(bad)
    let agreed = await withTaskGroup(of: Bool.self) { group in
      for _ in 0..<8 {
        group.addTask {
          (0..<200).allSatisfy { _ in schema.isValid(good) && schema.validate(bad) == expected }
        }
      }
      return await group.reduce(true) { $0 && $1 }
    }
    #expect(agreed)
    #expect(expected.count == 2)
  }

  // MARK: Numbers and strings

  @Test func numbersCompareByExactDecimalValue() throws {
    let multiple = try schema(#"{"multipleOf": 0.0001}"#)
    #expect(multiple.isValid(try JSONValue(parsing: "0.0075")))
    #expect(!multiple.isValid(try JSONValue(parsing: "0.00751")))
    #expect(multiple.isValid(try JSONValue(parsing: "12345678901234567890.1234")))
    let huge = try schema(#"{"multipleOf": 1e400}"#)
    #expect(!huge.isValid(5))
    #expect(huge.isValid(try JSONValue(parsing: "3e400")))
    #expect(!huge.isValid(try JSONValue(parsing: "3.5e400")))
    let constant = try schema(#"{"const": 1}"#)
    #expect(constant.isValid(try JSONValue(parsing: "1.0")))
    #expect(constant.isValid(try JSONValue(parsing: "1e0")))
    let maximum = try schema(#"{"maximum": 18446744073709551615}"#)
    #expect(maximum.isValid(try JSONValue(parsing: "18446744073709551615")))
    #expect(!maximum.isValid(try JSONValue(parsing: "18446744073709551616")))
    #expect(!maximum.isValid(try JSONValue(parsing: "1e400")))
    let integer = try schema(#"{"type": "integer"}"#)
    #expect(integer.isValid(try JSONValue(parsing: "1.0")))
    #expect(integer.isValid(try JSONValue(parsing: "1e3")))
    #expect(!integer.isValid(try JSONValue(parsing: "1.5e0")))
  }

  @Test func lengthsCountCodePoints() throws {
    let schema = try schema(#"{"minLength": 2, "maxLength": 2}"#)
    #expect(!schema.isValid("😀"))
    #expect(schema.isValid("😀é"))
    #expect(!schema.isValid("abc"))
    #expect(schema.validate("abc").map(\.description) == [#"(root): "abc" is longer than 2 characters (maxLength)"#])
  }

  // MARK: Formats

  @Test func formatIsAnAnnotationUnlessAsserted() throws {
    let text = #"{"properties": {"day": {"format": "date"}, "id": {"format": "uuid"}, "other": {"format": "no-such-format"}}}"#
    let instance = try JSONValue(parsing: #"{"day": "2024-02-30", "id": "not-a-uuid", "other": "x"}"#)
    #expect(try schema(text).isValid(instance))
    let asserting = try schema(text, options: .init(assertFormats: true))
    #expect(asserting.validate(instance).map(\.description) == [
      #"/day: "2024-02-30" is not a valid date (format)"#,
      #"/id: "not-a-uuid" is not a valid uuid (format)"#,
    ])
    #expect(asserting.isValid(try JSONValue(parsing: #"{"day": "2024-02-29", "id": "2eb8aa08-aa98-11ea-b4aa-73b441d16380"}"#)))
  }

  // MARK: References

  @Test func resolverSuppliesOtherDocuments() throws {
    let remote = try JSONValue(parsing: #"{"$defs": {"port": {"type": "integer", "maximum": 65535}}}"#)
    var asked: [String] = []
    let schema = try JSONSchema(
      JSONValue(parsing: #"{"properties": {"port": {"$ref": "common.json#/$defs/port"}, "backup": {"$ref": "./common.json#/$defs/port"}}}"#),
      baseURI: "https://example.com/schemas/app.json"
    ) { uri in
      asked.append(uri)
      return uri == "https://example.com/schemas/common.json" ? remote : nil
    }
    #expect(asked == ["https://example.com/schemas/common.json"])
    #expect(schema.validate(try JSONValue(parsing: #"{"port": 70000}"#)).map(\.schemaLocation) == [
      "https://example.com/schemas/common.json#/$defs/port/maximum"
    ])
  }

  @Test func recursiveSchemasThatConsumeInputAreFine() throws {
    let schema = try schema(##"{"type": "object", "properties": {"child": {"$ref": "#"}, "name": {"type": "string"}}}"##)
    #expect(schema.isValid(try JSONValue(parsing: #"{"child": {"child": {"name": "x"}}}"#)))
    #expect(schema.validate(try JSONValue(parsing: #"{"child": {"child": {"name": 1}}}"#)).map(\.description) == [
      "/child/child/name: 1 is not a string (type)"
    ])
  }

  /// As deep as the parser allows, through a recursive `$ref` at every level.
  @Test func deeplyNestedInstancesValidate() throws {
    let schema = try schema(##"{"type": ["array", "integer"], "items": {"$ref": "#"}}"##)
    let depth = JSONParser.Options.defaultMaximumDepth
    let good = try JSONValue(parsing: String(repeating: "[", count: depth) + "1" + String(repeating: "]", count: depth))
    #expect(schema.isValid(good))
    let bad = try JSONValue(parsing: String(repeating: "[", count: depth) + "true" + String(repeating: "]", count: depth))
    let failures = schema.validate(bad)
    #expect(failures.count == 1)
    #expect(failures.first?.instanceLocation == String(repeating: "/0", count: depth))
    #expect(failures.first?.message == "true is not an array or an integer")
  }

  /// Deeper than the validator's nesting limit (the parser's limit raised): a failure that
  /// says so, not a stack overflow.
  @Test func nestingBeyondTheLimitFailsInsteadOfCrashing() throws {
    let schema = try schema(##"{"items": {"$ref": "#"}}"##)
    let depth = 1_000
    let deep = try JSONValue(
      parsing: String(repeating: "[", count: depth) + String(repeating: "]", count: depth), options: .init(maximumDepth: depth))
    #expect(!schema.isValid(deep))
    let failures = schema.validate(deep)
    #expect(failures.count == 1)
    #expect(failures.first?.message == "schemas nest more than 1500 levels deep here; validation stops")
  }

  // MARK: Invalid schemas

  @Test func schemaMustBeAnObjectOrBoolean() throws {
    let error = try compileError("5")
    #expect(error?.description == "#: a schema must be an object or a boolean, not number 5")
    let nested = try compileError(#"{"properties": {"a": "string"}}"#)
    #expect(nested?.description == #"#/properties/a: properties values must be schemas, not string"#)
  }

  @Test func badTypeNameIsNamedWithItsLocation() throws {
    let error = try compileError(#"{"properties": {"port": {"type": "int"}}}"#)
    #expect(error?.schemaLocation == "#/properties/port/type")
    #expect(error?.message == #""int" is not a JSON type name (null, boolean, object, array, number, string, integer)"#)
  }

  @Test func keywordsOfTheWrongTypeAreRejected() throws {
    #expect(try compileError(#"{"minLength": -1}"#)?.description == "#/minLength: minLength must be a non-negative integer, not -1")
    #expect(try compileError(#"{"required": "a"}"#)?.description == "#/required: required must be an array of strings, not string")
    #expect(try compileError(#"{"multipleOf": 0}"#)?.description == "#/multipleOf: multipleOf must be greater than 0, not 0")
    #expect(try compileError(#"{"items": [{}]}"#)?.schemaLocation == "#/items")
  }

  @Test func invalidRegularExpressionIsRejected() throws {
    let error = try compileError(#"{"properties": {"a": {"pattern": "^(abc"}}}"#)
    #expect(error?.schemaLocation == "#/properties/a/pattern")
    #expect(error?.message.hasPrefix(#""^(abc" is not a valid regular expression"#) == true)
    let key = try compileError(#"{"patternProperties": {"[a-": {}}}"#)
    #expect(key?.schemaLocation == "#/patternProperties/[a-")
  }

  @Test func missingReferenceTargetIsRejected() throws {
    let pointer = try compileError(##"{"properties": {"a": {"$ref": "#/$defs/missing"}}}"##)
    #expect(pointer?.description == ##"#/properties/a/$ref: $ref "#/$defs/missing" points to nothing: https://ccsync.invalid/schema.json has no /$defs/missing"##)
    let anchor = try compileError(##"{"$ref": "#nowhere"}"##)
    #expect(anchor?.description == ##"#/$ref: $ref "#nowhere" names the anchor "nowhere", which https://ccsync.invalid/schema.json does not define"##)
    let remote = try compileError(##"{"$ref": "https://example.com/other.json"}"##)
    #expect(remote?.description == ##"#/$ref: $ref "https://example.com/other.json" names https://example.com/other.json, which is not a known schema"##)
  }

  @Test func referenceCyclesAreRejectedNotLooped() throws {
    let root = try compileError(##"{"$ref": "#"}"##)
    #expect(root?.description == "#: $ref cycle that never reaches into the instance: # -> #")
    let pair = try compileError(##"{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}"##)
    #expect(pair?.message.contains("$ref cycle") == true)
    #expect(pair?.message.contains("#/$defs/a") == true)
    #expect(pair?.message.contains("#/$defs/b") == true)
  }

  @Test func resolverErrorsFailTheCompilation() throws {
    struct Offline: Error, CustomStringConvertible { var description: String { "offline" } }
    let value = try JSONValue(parsing: #"{"$ref": "https://example.com/x.json"}"#)
    let error = #expect(throws: JSONSchemaError.self) { try JSONSchema(value) { _ in throw Offline() } }
    #expect(error?.description == "#/$ref: loading https://example.com/x.json failed: offline")
  }

  // MARK: Patterns

  /// The byte-level fast path agrees with Swift's `Regex` on the patterns it takes.
  @Test(arguments: [
    "^[a-z0-9.-]+$", "^a*$", "a+", "^[^/]+/[^/]+$", "x{2,3}", "^\\d{3}-\\d{4}$", "^\\w+$", "^[A-Z_][A-Z0-9_]*$",
    "^.$", "^.{2}$", "b?c", "^[a\\-z]+$", "^\\.\\*$", "^v[0-9]+\\.[0-9]+(?:x)?$", "^$", "", "[-a]", "^\\D\\W$",
    "f.*o", "^a{0,}b{1,2}?$",
  ])
  func simplePatternsAgreeWithRegex(source: String) throws {
    let pattern = try SchemaPattern(source)
    for text in ["", "a", "aa", "abc", "db.local", "DB!", "x/y", "xx", "123-4567", "snake_case", "ENV_VAR", "é", "😀",
                 "a\nb", "\n", "v1.2", "-", ".*", "foo", "fxo", "aab", "abbb", "\u{2028}", "a-z", "1é"] {
      #expect(pattern.matches(text) == pattern.regexMatches(text), "\(source) on \(text.debugDescription)")
    }
  }

  @Test func simplePatternsTakeTheFastPathAndOthersDoNot() throws {
    #expect(try SchemaPattern("^[a-z0-9.-]+$").isSimple)
    #expect(try SchemaPattern("^\\d{3}$").isSimple)
    #expect(try !SchemaPattern("^(a|b)$").isSimple)
    #expect(try !SchemaPattern("^\\s$").isSimple)
    #expect(try !SchemaPattern("^\\p{Letter}+$").isSimple)
  }

  /// A pattern that would backtrack exponentially still finishes: the fast path remembers
  /// failed states once plain backtracking has taken too many steps. (Swift's `Regex` took
  /// 2.3 s to reject 40 `a`s in a debug build; this rejects 300 at once.)
  @Test func nestedQuantifiersDoNotBacktrackExponentially() throws {
    let pattern = try SchemaPattern("^a*a*a*a*a*a*b$")
    #expect(pattern.isSimple)
    let run = String(repeating: "a", count: 300)
    #expect(!pattern.matches(run))
    #expect(pattern.matches(run + "b"))
    #expect(!pattern.matches(run + "ba"))
    let short = String(repeating: "a", count: 8)
    #expect(pattern.matches(short) == pattern.regexMatches(short))
  }

  @Test func patternsFollowECMAScriptClasses() throws {
    #expect(try SchemaPattern("^\\s$").matches("\u{FEFF}"))
    #expect(try !SchemaPattern("^\\S$").matches("\u{FEFF}"))
    #expect(try !SchemaPattern("^\\d$").matches("\u{0660}"))  // ARABIC-INDIC DIGIT ZERO: not ECMA's \d
    #expect(try !SchemaPattern("^\\w$").matches("é"))
    #expect(try SchemaPattern("^\\cC$").matches("\u{3}"))
    #expect(try SchemaPattern("^\\p{Letter}+$").matches("héllo"))
  }
}
