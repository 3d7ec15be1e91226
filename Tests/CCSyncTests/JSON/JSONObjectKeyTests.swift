import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem
@testable import CCSyncBench

/// Object keys are compared by their exact bytes, as JSON does (RFC 8259, section 8.3) and
/// as Python, JavaScript and jq do: `"é"` as one scalar (U+00E9, NFC) and as `e` with a
/// combining accent (U+0301, NFD) are two keys, and so are `K` and the Kelvin sign (U+212A),
/// though Swift's `String ==` takes each pair for one string. Every layer keeps both members
/// apart: lookup, setting, removing, equality, change sets, merge patches and Codable.
@Suite struct JSONObjectKeyTests {
  static let composed = "\u{E9}"
  static let decomposed = "e\u{301}"

  /// Each pair is canonically equivalent: `String ==` calls them equal.
  static let pairs: [(String, String)] = [(composed, decomposed), ("K", "\u{212A}"), ("a;", "a\u{37E}")]

  /// `{"first": 1, "second": 2}` as text, with `padding` more members before them (past
  /// `JSONObject.indexThreshold` the object looks keys up through its index).
  static func document(_ first: String, _ second: String, padding: Int) throws -> JSONValue {
    var members = (0..<padding).map { "\"pad\($0)\": 0" }
    members += ["\"\(first)\": 1", "\"\(second)\": 2"]
    return try JSONValue(parsing: "{" + members.joined(separator: ", ") + "}")
  }

  @Test(arguments: [0, 40]) func equivalentKeysAreTwoMembers(padding: Int) throws {
    for (first, second) in Self.pairs {
      #expect(first == second, "the pair must be canonically equivalent to test anything")
      let object = try #require(try Self.document(first, second, padding: padding).objectValue)
      #expect(object.count == padding + 2)
      #expect(object[first] == 1 && object[second] == 2, "\(first.unicodeScalars.map(\.value))")
      #expect(object.position(of: first) == padding && object.position(of: second) == padding + 1)

      var changed = object
      changed[second] = 3
      #expect(changed[first] == 1 && changed[second] == 3 && changed.count == padding + 2)
      changed[first] = nil
      #expect(changed[first] == nil && changed[second] == 3 && changed.count == padding + 1)

      var built = JSONObject()
      built[first] = 1
      built[second] = 2
      #expect(built.count == 2 && built.keys.map { Array($0.utf8) } == [Array(first.utf8), Array(second.utf8)])
    }
  }

  /// An object of these members, in this order.
  static func object(_ members: (String, JSONValue)...) -> JSONObject {
    JSONObject(members)
  }

  @Test func equalityTellsEquivalentKeysApart() throws {
    for (first, second) in Self.pairs {
      #expect(Self.object((first, 1)) != Self.object((second, 1)))
      #expect(Self.object((first, 1), (second, 2)) != Self.object((first, 2), (second, 1)))
      #expect(Self.object((first, 1), (second, 2)) == Self.object((second, 2), (first, 1)))
      #expect(JSONObject.Member(key: first, value: 1) != JSONObject.Member(key: second, value: 1))
    }
  }

  @Test func pathsReachEachMember() throws {
    var document = try Self.document(Self.composed, Self.decomposed, padding: 0)
    #expect(try document.value(at: JSONPath(tokens: [Self.decomposed])) == 2)
    try document.setValue(5, at: JSONPath(tokens: [Self.decomposed]))
    #expect(document.formatted(.compact) == "{\"\(Self.composed)\":1,\"\(Self.decomposed)\":5}")
    #expect(try document.removeValue(at: JSONPath(tokens: [Self.composed])) == 1)
    #expect(document.formatted(.compact) == "{\"\(Self.decomposed)\":5}")
  }

  /// A change to one of the two members changes that member only, whichever document the
  /// change set is applied to; a change to the other is not a conflict.
  @Test func changeSetsKeepEquivalentKeysApart() throws {
    for (first, second) in Self.pairs {
      let base = try Self.document(first, second, padding: 0)
      var ours = base
      try ours.setValue(10, at: JSONPath(tokens: [second]))
      var theirs = base
      try theirs.setValue(20, at: JSONPath(tokens: [first]))
      let ourChanges = JSONChangeSet(from: base, to: ours)
      let theirChanges = JSONChangeSet(from: base, to: theirs)
      #expect(ourChanges.changes == [.set(path: [second], value: 10)])
      #expect(ourChanges.applied(to: base) == ours)
      #expect(ourChanges.conflicts(with: theirChanges).isEmpty)
      let merged = ourChanges.applied(to: theirs).objectValue
      #expect(merged?[first] == 20 && merged?[second] == 10 && merged?.count == 2)
      #expect(ourChanges.merging(theirChanges).applied(to: base).formatted(.compact)
        == "{\"\(first)\":20,\"\(second)\":10}")
    }
  }

  @Test func mergePatchesKeepEquivalentKeysApart() throws {
    let base = try Self.document(Self.composed, Self.decomposed, padding: 0)
    let patched = base.mergePatched(with: .object(Self.object((Self.decomposed, nil), (Self.composed, 7))))
    #expect(patched.formatted(.compact) == "{\"\(Self.composed)\":7}")
  }

  struct Accents: Codable, Equatable {
    var composed: Int
    var decomposed: Int
    enum CodingKeys: String, CodingKey {
      case composed = "\u{E9}"
      case decomposed = "e\u{301}"
    }
  }

  @Test func codableKeepsEquivalentKeysApart() throws {
    let value = Accents(composed: 1, decomposed: 2)
    let tree = try JSONValueEncoder().encode(value)
    #expect(tree.formatted(.compact) == "{\"\(Self.composed)\":1,\"\(Self.decomposed)\":2}")
    // The one-pass text encoder writes both keys too, without falling back to the tree.
    let text = try #require(JSONTextEncoderImpl.encode(value, options: JSONValueEncoder(), style: .compact))
    #expect(String(decoding: text, as: UTF8.self) == "{\"\(Self.composed)\":1,\"\(Self.decomposed)\":2}")
    #expect(try JSONValueDecoder().decode(Accents.self, from: tree) == value)
    let swapped = try JSONValue(parsing: "{\"\(Self.decomposed)\": 2, \"\(Self.composed)\": 1}")
    #expect(try JSONValueDecoder().decode(Accents.self, from: swapped) == value)
    // A key that is only canonically equivalent is not the coding key.
    let onlyDecomposed = try JSONValue(parsing: "{\"\(Self.decomposed)\": 2, \"\(Self.decomposed)x\": 1}")
    #expect(throws: DecodingError.self) { try JSONValueDecoder().decode(Accents.self, from: onlyDecomposed) }
    // A Swift dictionary holds one of the two keys: the last member's value.
    let both = try Self.document(Self.composed, Self.decomposed, padding: 0)
    #expect(try JSONValueDecoder().decode([String: Int].self, from: both).map(\.value) == [2])
    #expect(try JSONValueDecoder().decode([String: String].self, from: .object(Self.object((Self.composed, "a"), (Self.decomposed, "b")))).map(\.value) == ["b"])
  }

  /// A key is compared by its bytes whatever its representation: a short key held in the
  /// string's own bits (a "small" string, at most 15 bytes) and the same bytes in a buffer of
  /// their own are one key; two small keys of one length that differ are two.
  @Test func keysCompareByBytesWhateverTheirStorage() throws {
    for key in ["counter", "\u{E9}t\u{E9}", "", "x", "fifteen-bytes!!"] {
      var stored = key
      stored.reserveCapacity(64)  // the same bytes, in a buffer of its own
      #expect(key.hasSameBytes(as: stored) && stored.hasSameBytes(as: key), "\(key)")
      let object = Self.object(("servers", 1), (stored, 2))
      #expect(object.position(of: key) == 1 && object[key] == 2, "\(key)")
    }
    for (first, second) in [("counter", "servers"), ("$schema", "version"), ("a", "b"), ("\u{E9}", "e")] {
      #expect(!first.hasSameBytes(as: second), "\(first) \(second)")
    }
    let object = Self.object(("servers", 1), ("version", 2), ("counter", 3))
    #expect(object.position(of: "counter") == 2 && object.position(of: "$schema") == nil)
  }
}
