import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

@Suite struct JSONMergePatchTests {
  /// Every example of RFC 7396 Appendix A: original, patch, result.
  static let appendixA: [(JSONValue, JSONValue, JSONValue)] = [
    (["a": "b"], ["a": "c"], ["a": "c"]),
    (["a": "b"], ["b": "c"], ["a": "b", "b": "c"]),
    (["a": "b"], ["a": nil], [:]),
    (["a": "b", "b": "c"], ["a": nil], ["b": "c"]),
    (["a": ["b"]], ["a": "c"], ["a": "c"]),
    (["a": "c"], ["a": ["b"]], ["a": ["b"]]),
    (["a": ["b": "c"]], ["a": ["b": "d", "c": nil]], ["a": ["b": "d"]]),
    (["a": [["b": "c"]]], ["a": [1]], ["a": [1]]),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    (["a": "b"], ["c"], ["c"]),
    (["a": "foo"], nil, nil),
    (["a": "foo"], "bar", "bar"),
    (["e": nil], ["a": 1], ["e": nil, "a": 1]),
    ([1, 2], ["a": "b", "c": nil], ["a": "b"]),
    ([:], ["a": ["bb": ["ccc": nil]]], ["a": ["bb": [:]]]),
  ]

  @Test(arguments: appendixA)
  func appendixAExample(original: JSONValue, patch: JSONValue, result: JSONValue) {
    #expect(original.mergePatched(with: patch) == result)
  }

  /// The example of RFC 7396 section 3, including where the new member goes.
  @Test func sectionThreeExample() {
    let original: JSONValue = [
      "title": "Goodbye!",
      "author": ["givenName": "John", "familyName": "Doe"],
      "tags": ["example", "sample"],
      "content": "This will be unchanged",
    ]
    let patch: JSONValue = [
      "title": "Hello!",
      "phoneNumber": "+01-123-456-7890",
      "author": ["familyName": nil],
      "tags": ["example"],
    ]
    let result = original.mergePatched(with: patch)
    #expect(
      result == [
        "title": "Hello!",
        "author": ["givenName": "John"],
        "tags": ["example"],
        "content": "This will be unchanged",
        "phoneNumber": "+01-123-456-7890",
      ])
    #expect(result.objectValue?.keys == ["title", "author", "tags", "content", "phoneNumber"])
  }

  @Test func untouchedAndEqualMembersKeepTheirText() throws {
    let spelled = JSONValue.number(try #require(JSONNumber(text: "1.50")))
    let original: JSONValue = ["n": spelled, "m": spelled, "o": ["x": 1]]
    let result = original.mergePatched(with: ["n": 1.5, "o": ["y": 2]])
    #expect(result.objectValue?["n"]?.numberValue?.text == "1.50")
    #expect(result.objectValue?["m"]?.numberValue?.text == "1.50")
    #expect(result == ["n": 1.5, "m": 1.5, "o": ["x": 1, "y": 2]])
    #expect(result.objectValue?["o"]?.objectValue?.keys == ["x", "y"])
  }

  /// A patch leaves the value it was called on alone: `mergePatched` returns a copy.
  @Test func theOriginalIsUnchanged() {
    let original: JSONValue = ["a": ["b": 1]]
    let result = original.mergePatched(with: ["a": ["b": nil, "c": 2]])
    #expect(original == ["a": ["b": 1]])
    #expect(result == ["a": ["c": 2]])
  }
}
