import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

@Suite struct JSONPrinterTests {
  /// Every kind of value in both styles; pretty output always ends with a newline.
  @Test(arguments: [
    (JSONValue.null, "null"),
    (true, "true"),
    (false, "false"),
    (.number(JSONNumber(text: "12345678901234567890")!), "12345678901234567890"),
    (.number(JSONNumber(text: "1.50")!), "1.50"),
    (.number(JSONNumber(text: "-0")!), "-0"),
    (.number(JSONNumber(text: "1E+2")!), "1E+2"),
    (42, "42"),
    (-0.25, "-0.25"),
    ("", #""""#),
    ("plain", #""plain""#),
    ([], "[]"),
    ([:], "{}"),
  ] as [(JSONValue, String)])
  func scalarsAndEmptyContainers(value: JSONValue, text: String) {
    #expect(value.formatted(.compact) == text)
    #expect(value.formatted(.pretty) == text + "\n")
    #expect(value.formatted() == text + "\n")
    #expect(value.formattedBytes(.compact) == Array(text.utf8))
  }

  @Test func prettyLayout() throws {
    let value: JSONValue = [
      "name": "demo",
      "ports": [80, 443],
      "extra": [:],
      "list": [],
      "nested": ["deep": [["x": nil, "y": true]]],
    ]
    let expected = """
      {
        "name": "demo",
        "ports": [
          80,
          443
        ],
        "extra": {},
        "list": [],
        "nested": {
          "deep": [
            {
              "x": null,
              "y": true
            }
          ]
        }
      }

      """
    #expect(value.formatted(.pretty) == expected)
    #expect(value.formattedBytes(.pretty) == Array(expected.utf8))
    #expect(value.formatted(.compact)
      == #"{"name":"demo","ports":[80,443],"extra":{},"list":[],"nested":{"deep":[{"x":null,"y":true}]}}"#)
  }

  /// Only what RFC 8259 requires is escaped; the short forms where JSON has them.
  @Test(arguments: [
    ("\"", #""\"""#),
    ("\\", #""\\""#),
    ("/", #""/""#),
    ("</script>", #""</script>""#),
    ("\n", #""\n""#),
    ("\r", #""\r""#),
    ("\t", #""\t""#),
    ("\u{8}", #""\b""#),
    ("\u{C}", #""\f""#),
    ("\u{0}", #""\u0000""#),
    ("\u{1}", #""\u0001""#),
    ("\u{B}", #""\u000b""#),
    ("\u{1B}", #""\u001b""#),
    ("\u{1F}", #""\u001f""#),
    ("\u{7F}", "\"\u{7F}\""),
    ("é ü 日本語 😀", #""é ü 日本語 😀""#),
    ("\u{2028}\u{2029}", "\"\u{2028}\u{2029}\""),
    ("\u{FEFF}", "\"\u{FEFF}\""),
    ("a\"b\\c\nd", #""a\"b\\c\nd""#),
    ("tab\tat end\t", #""tab\tat end\t""#),
  ])
  func stringEscapes(string: String, text: String) throws {
    #expect(JSONValue.string(string).formatted(.compact) == text)
    // Keys are written the same way.
    #expect(JSONValue.object(JSONObject([(string, 1 as JSONValue)])).formatted(.compact) == "{\(text):1}")
    #expect(try JSONValue(parsing: text) == .string(string))
  }

  @Test func everyControlCharacterIsEscaped() throws {
    let all = String(decoding: Array(UInt8(0)..<0x20), as: UTF8.self)
    let text = JSONValue.string(all).formatted(.compact)
    #expect(text.utf8.allSatisfy { $0 >= 0x20 })
    #expect(text == #""\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\b\t\n\u000b\f\r\u000e\u000f\u0010\u0011\u0012\u0013\u0014\u0015\u0016\u0017\u0018\u0019\u001a\u001b\u001c\u001d\u001e\u001f""#)
    #expect(try JSONValue(parsing: text) == .string(all))
  }

  /// Long strings (past the printer's first buffer) and substrings print correctly too.
  @Test func longAndBridgedStrings() throws {
    let long = String(repeating: "abc\"é\n", count: 10_000)
    let text = JSONValue.string(long).formatted(.compact)
    #expect(text.utf8.count == 2 + 10_000 * 9)
    #expect(try JSONValue(parsing: text) == .string(long))
    // Escapes that grow the text six times over, past the room reserved for the plain text.
    let controls = String(repeating: "\u{1}a\u{1f}", count: 4_000)
    let escaped = JSONValue.string(controls).formatted(.compact)
    #expect(escaped.utf8.count == 2 + 4_000 * 13)
    #expect(try JSONValue(parsing: escaped) == .string(controls))
    let substring = String(Substring("xx\u{1}yy".dropFirst()))
    #expect(JSONValue.string(substring).formatted(.compact) == #""x\u0001yy""#)
  }

  /// Printed text of random values parses back equal, in both styles.
  @Test(arguments: 0..<40)
  func outputParsesBackEqual(seed: Int) throws {
    var random = SeededJSONRandom(seed: UInt64(seed))
    let value = random.value(depth: 5)
    for style in [JSONFormat.compact, .pretty] {
      let text = value.formatted(style)
      #expect(try JSONValue(parsing: text) == value)
      #expect(try JSONValue(parsing: text).formatted(style) == text)
    }
  }

  /// Text already in the pretty layout prints back byte for byte.
  @Test func prettyOfPrettyIsIdentical() throws {
    let compact = #"{"name":"svc","ratio":1.50,"big":12345678901234567890,"e":1E+2,"z":-0,"#
      + #""s":"a\"b\\c\n\u0001/é😀","empty":{},"none":[],"list":[1,[2,[3,{}]],{"k":null}],"#
      + #""obj":{"b":true,"a":false}}"#
    let pretty = try JSONValue(parsing: compact).formatted(.pretty)
    #expect(try JSONValue(parsing: pretty).formatted(.pretty) == pretty)
    #expect(try JSONValue(parsing: pretty).formatted(.compact) == compact)
  }

  @Test func exampleConfigPrintsBackIdentically() throws {
    // Config/example.json is hand-written in the pretty layout except for inline objects
    // and arrays; after one pretty print it is a fixed point.
    let example = """
      {
        "name": "ccsync demo service",
        "ratio": 1.50,
        "maxUploadBytes": 12345678901234567890,
        "server": {
          "host": "127.0.0.1",
          "timeouts": {
            "connect": 2.5,
            "read": 30
          }
        },
        "servers": [
          {
            "host": "alpha.internal",
            "weight": 0.7
          }
        ],
        "tags": [],
        "limits": {}
      }

      """
    let bytes = try JSONValue(parsing: example).formattedBytes(.pretty)
    #expect(bytes == Array(example.utf8))
  }

  @Test func deepNestingPrints() throws {
    let depth = JSONParser.Options.defaultMaximumDepth
    let text = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
    let value = try JSONValue(parsing: text)
    #expect(value.formatted(.compact) == text)
    let pretty = value.formatted(.pretty)
    #expect(try JSONValue(parsing: pretty) == value)
    #expect(pretty.utf8.count > depth * depth)
  }
}
