import Testing
import CCSyncJSON

/// `JSONValueDecoder.decode(_:from:missingMembersFrom:)`: a keyed container takes a member the
/// object lacks from the fallback; `allKeys` lists the object's keys only.
@Suite struct JSONValueDecoderFallbackTests {
  struct Inner: Codable, Equatable {
    var port = 0
    var host = ""
  }
  struct Settings: Codable, Equatable {
    var theme = ""
    var inner = Inner()
    var weights: [String: Double] = [:]
    var labels: [Int: String] = [:]
    var note: String?
  }

  private let fallback: JSONValue = [
    "theme": "light", "inner": ["port": 80, "host": "localhost"], "weights": ["a": 1],
    "labels": ["1": "one"], "note": "default note",
  ]

  @Test func aStructTakesMissingFieldsFromTheFallbackAtAnyDepth() throws {
    let decoded = try JSONValueDecoder().decode(
      Settings.self, from: ["inner": ["host": "example.org"]], missingMembersFrom: fallback)
    #expect(decoded == Settings(
      theme: "light", inner: Inner(port: 80, host: "example.org"), weights: ["a": 1], labels: [1: "one"], note: "default note"))
  }

  /// The bug the fallback replaced an overlay to fix: entries are the data, so a dictionary
  /// gets the document's entries and no others, at the top level and inside a struct.
  @Test func aDictionaryGetsExactlyTheDocumentsEntries() throws {
    let decoder = JSONValueDecoder()
    #expect(try decoder.decode([String: Double].self, from: [:], missingMembersFrom: ["a": 1]) == [:])
    #expect(try decoder.decode([String: Double].self, from: ["b": 2], missingMembersFrom: ["a": 1]) == ["b": 2])
    #expect(try decoder.decode([Int: String].self, from: [:], missingMembersFrom: ["1": "one"]) == [:])
    let decoded = try decoder.decode(
      Settings.self, from: ["theme": "dark", "weights": [:], "labels": ["2": "two"]], missingMembersFrom: fallback)
    #expect(decoded.weights == [:])
    #expect(decoded.labels == [2: "two"])
    #expect(decoded.inner == Inner(port: 80, host: "localhost"))
  }

  /// An entry the document has takes its missing fields from the fallback's entry of the same
  /// key; it never adds an entry.
  @Test func aDictionaryEntryTakesMissingFieldsFromTheSameEntry() throws {
    let decoded = try JSONValueDecoder().decode(
      [String: Inner].self, from: ["a": ["host": "x"]],
      missingMembersFrom: ["a": ["port": 1, "host": "y"], "b": ["port": 2, "host": "z"]])
    #expect(decoded == ["a": Inner(port: 1, host: "x")])
  }

  @Test func anOptionalIsNilOnlyWhereTheDocumentSaysNull() throws {
    let decoder = JSONValueDecoder()
    #expect(try decoder.decode(Settings.self, from: ["note": nil], missingMembersFrom: fallback).note == nil)
    #expect(try decoder.decode(Settings.self, from: [:], missingMembersFrom: fallback).note == "default note")
  }

  @Test func aKeyNeitherHasIsStillMissing() {
    #expect(throws: DecodingError.self) {
      try JSONValueDecoder().decode(Inner.self, from: ["host": "x"], missingMembersFrom: ["theme": "light"])
    }
  }

  /// Without a fallback nothing changes: a missing field is an error.
  @Test func theUsualDecodeHasNoFallback() {
    #expect(throws: DecodingError.self) { try JSONValueDecoder().decode(Inner.self, from: ["host": "x"]) }
  }
}
