#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

// MARK: Fixtures

private struct Server: Codable, Equatable {
  var host: String
  var port: Int
}

private struct Config: Codable, Equatable {
  var name: String
  var server: Server
  var servers: [Server]
  var tags: [String]
  var ratio: Double
  var enabled: Bool
  var retries: UInt8
}

private struct Ordered: Codable, Equatable {
  var zebra = 1
  var apple = 2
  var mango = 3
  var nested = Inner()
  struct Inner: Codable, Equatable {
    var y = "y"
    var b = "b"
  }
}

private enum Level: String, Codable, Equatable { case low, high }
private enum Priority: Int, Codable, Equatable { case one = 1, two = 2 }

private enum Shape: Codable, Equatable {
  case circle(radius: Double)
  case rect(width: Double, height: Double)
  case labeled(String)
  case none
}

private struct Optionals: Codable, Equatable {
  var count: Int?
  var name: String?
  var server: Server?
}

private struct Point: Codable, Hashable {
  var x: Int
  var y: Int
}

private enum Color: String, Codable, CodingKeyRepresentable, Hashable { case red, green }

private class Animal: Codable {
  var name: String
  init(name: String) { self.name = name }
}

/// Encodes its superclass under `super`, the way superEncoder() is meant to be used.
private final class Dog: Animal {
  var breed: String
  init(name: String, breed: String) {
    self.breed = breed
    super.init(name: name)
  }
  private enum CodingKeys: String, CodingKey { case breed }
  required init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    breed = try container.decode(String.self, forKey: .breed)
    try super.init(from: container.superDecoder())
  }
  override func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(breed, forKey: .breed)
    try super.encode(to: container.superEncoder())
  }
}

/// Shares its superclass's container: one flat object.
private final class Cat: Animal {
  var lives: Int
  init(name: String, lives: Int) {
    self.lives = lives
    super.init(name: name)
  }
  private enum CodingKeys: String, CodingKey { case lives }
  required init(from decoder: any Decoder) throws {
    lives = try decoder.container(keyedBy: CodingKeys.self).decode(Int.self, forKey: .lives)
    try super.init(from: decoder)
  }
  override func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(lives, forKey: .lives)
    try super.encode(to: encoder)
  }
}

/// Uses every kind of nested container by hand.
private struct Manual: Codable, Equatable {
  var a: Int
  var list: [String]
  var pairs: [[Int]]
  var extra: String

  private enum Keys: String, CodingKey { case meta, list, pairs, a, extra, rest }
  private enum MetaKeys: String, CodingKey { case a, extra }

  init(a: Int, list: [String], pairs: [[Int]], extra: String) {
    (self.a, self.list, self.pairs, self.extra) = (a, list, pairs, extra)
  }

  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: Keys.self)
    var meta = container.nestedContainer(keyedBy: MetaKeys.self, forKey: .meta)
    try meta.encode(a, forKey: .a)
    var list = container.nestedUnkeyedContainer(forKey: .list)
    for item in self.list { try list.encode(item) }
    var pairs = container.nestedUnkeyedContainer(forKey: .pairs)
    for pair in self.pairs {
      var inner = pairs.nestedUnkeyedContainer()
      for number in pair { try inner.encode(number) }
    }
    var rest = container.nestedUnkeyedContainer(forKey: .rest)
    var restObject = rest.nestedContainer(keyedBy: MetaKeys.self)
    try restObject.encode(extra, forKey: .extra)
    // Reaching the same nested container again adds to it.
    var metaAgain = container.nestedContainer(keyedBy: MetaKeys.self, forKey: .meta)
    try metaAgain.encode(extra, forKey: .extra)
  }

  init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: Keys.self)
    let meta = try container.nestedContainer(keyedBy: MetaKeys.self, forKey: .meta)
    a = try meta.decode(Int.self, forKey: .a)
    extra = try meta.decode(String.self, forKey: .extra)
    var listContainer = try container.nestedUnkeyedContainer(forKey: .list)
    var list: [String] = []
    while !listContainer.isAtEnd { list.append(try listContainer.decode(String.self)) }
    self.list = list
    var pairsContainer = try container.nestedUnkeyedContainer(forKey: .pairs)
    var pairs: [[Int]] = []
    while !pairsContainer.isAtEnd {
      var inner = try pairsContainer.nestedUnkeyedContainer()
      var pair: [Int] = []
      while !inner.isAtEnd { pair.append(try inner.decode(Int.self)) }
      pairs.append(pair)
    }
    self.pairs = pairs
    var rest = try container.nestedUnkeyedContainer(forKey: .rest)
    let restObject = try rest.nestedContainer(keyedBy: MetaKeys.self)
    #expect(try restObject.decode(String.self, forKey: .extra) == extra)
  }
}

private func encode<T: Encodable>(_ value: T, with encoder: JSONValueEncoder = JSONValueEncoder()) throws -> JSONValue {
  try encoder.encode(value)
}

private func decode<T: Decodable>(_ type: T.Type, _ value: JSONValue, with decoder: JSONValueDecoder = JSONValueDecoder()) throws -> T {
  try decoder.decode(type, from: value)
}

/// The decoding error `body` throws, for checking its case and path.
private func decodingError(_ body: () throws -> Void) -> DecodingError? {
  do {
    try body()
    return nil
  } catch let error as DecodingError {
    return error
  } catch {
    return nil
  }
}

private func pathText(_ path: [any CodingKey]) -> String { readableCodingPath(path) }

/// `Int64` members, which the decoder reads by a path of their own.
private struct Stamps: Codable, Equatable {
  var at: Int64
  var later: Int64?
  var all: [Int64]?
}

// MARK: Tests

/// A string through a single-value container, so `[String: PlainText]` takes the general
/// dictionary path.
private struct PlainText: Codable, Equatable {
  var text: String
  init(text: String) { self.text = text }
  init(from decoder: any Decoder) throws { text = try decoder.singleValueContainer().decode(String.self) }
  func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(text)
  }
}

@Suite struct JSONCodingTests {
  /// A key encoded twice replaces its value where it stands; keys are compared by their
  /// bytes (canonically equivalent keys with other bytes are other keys), however the encoder
  /// speeds that up.
  @Test(arguments: [
    (["a", "b", "a"], #"{"a":2,"b":1}"#),
    (["name", "nope", "nil", "name"], #"{"name":3,"nope":1,"nil":2}"#),
    (["K", "x", "\u{212A}"], "{\"K\":0,\"x\":1,\"\u{212A}\":2}"),
    (["\u{212A}", "x", "\u{212A}"], "{\"\u{212A}\":2,\"x\":1}"),
    (["\u{E9}", "e\u{301}"], "{\"\u{E9}\":0,\"e\u{301}\":1}"),
    (["e\u{301}x", "\u{E9}x", "e\u{301}x"], "{\"e\u{301}x\":2,\"\u{E9}x\":1}"),
    (["", "a", ""], #"{"":2,"a":1}"#),
  ] as [([String], String)])
  func keysEncodedTwiceReplaceTheValue(keys: [String], expected: String) throws {
    let value = try JSONValueEncoder().encode(KeySequence(keys: keys))
    #expect(value.formatted(.compact) == expected)
  }

  /// `[String: String]` takes a shortcut past `Dictionary.encode(to:)` and `init(from:)`;
  /// it must write and read exactly what the general path does for other dictionaries.
  @Test func int64MembersTakeEveryIntegerSpellingAndRejectTheRest() throws {
    let stamps = try decode(Stamps.self, ["at": .number(JSONNumber(text: "1e3")!), "later": -5, "all": [1, -2]])
    #expect(stamps == Stamps(at: 1000, later: -5, all: [1, -2]))
    #expect(try decode(Stamps.self, ["at": .number(JSONNumber(text: "9223372036854775807")!)]).at == .max)
    #expect(try decode(Stamps.self, ["at": .number(JSONNumber(text: "-9223372036854775808")!)]).at == .min)
    #expect(try decode(Stamps.self, ["at": 7, "later": nil]).later == nil)
    guard case .dataCorrupted(let context)? = decodingError({ _ = try decode(Stamps.self, ["at": 1.5]) }) else {
      Issue.record("a fraction is not an Int64")
      return
    }
    #expect(pathText(context.codingPath) == "at")
    guard case .dataCorrupted? = decodingError({ _ = try decode(Stamps.self, ["at": .number(JSONNumber(text: "9223372036854775808")!)]) }),
          case .typeMismatch? = decodingError({ _ = try decode(Stamps.self, ["at": 1, "later": "soon"]) }) else {
      Issue.record("out of range and a string must fail")
      return
    }
  }

  @Test func stringDictionariesMatchTheGeneralPath() throws {
    let words: [String: String] = ["b": "2", "a": "1", "é": "x", "10": "ten", "9": "nine", "": "empty"]
    let numbers: [String: String] = ["10": "ten", "9": "nine", "-1": "minus"]
    for dictionary in [words, numbers, [:]] {
      let fast = try JSONValueEncoder().encode(dictionary)
      let general = try JSONValueEncoder().encode(dictionary.mapValues { PlainText(text: $0) })
      #expect(fast.formatted(.compact) == general.formatted(.compact))
      #expect(try JSONValueDecoder().decode([String: String].self, from: fast) == dictionary)
      let nested = try JSONValueDecoder().decode([String: [String: String]].self, from: ["k": fast])
      #expect(nested == ["k": dictionary])
    }
    #expect(try JSONValueEncoder().encode(numbers).formatted(.compact) == #"{"-1":"minus","9":"nine","10":"ten"}"#)
    let error = #expect(throws: DecodingError.self) {
      try JSONValueDecoder().decode([String: String].self, from: ["a": "x", "b": 2])
    }
    #expect(error.map { "\($0)" }?.contains("b") == true)
  }

  /// `Decimal` is a number with its digits, as Foundation's coders have it, not the struct's
  /// own fields; the one-pass encoder writes the same bytes as the tree.
  @Test func decimalsAreNumbersAsFoundationWritesThem() throws {
    struct Price: Codable, Equatable { var amount: Decimal; var history: [Decimal] }
    let price = Price(amount: Decimal(string: "1.50")!, history: [Decimal(string: "-0.001")!, Decimal(string: "12345678901234567890.5")!])
    let ours = try JSONValueEncoder().encode(price).formatted(.compact)
    #expect(ours == #"{"amount":1.5,"history":[-0.001,12345678901234567890.5]}"#)
    #expect(try JSONValueEncoder().encodeBytes(price) == Array(ours.utf8))
    let foundation = try JSONDecoder().decode(Price.self, from: JSONEncoder().encode(price))
    #expect(try JSONValueDecoder().decode(Price.self, from: JSONValue(parsing: ours)) == foundation)
    #expect(try JSONValueDecoder().decode(Decimal.self, from: JSONValue(parsing: "1.5e3")) == Decimal(1500))
    #expect {
      try JSONValueDecoder().decode(Price.self, from: JSONValue(parsing: #"{"amount": "1.5", "history": []}"#))
    } throws: { error in
      "\((error as? DecodingError)?.readableDescription ?? "")".contains("amount: expected Decimal (a number)")
    }
  }

  /// Integer keys that are equal as numbers but spelled apart are ordered by spelling, not
  /// left in the dictionary's order, which changes with every process's hash seed.
  @Test func integerKeysThatTieAreOrderedBySpelling() throws {
    let keys = ["01", "+1", "1", "001", "2", "-1"]
    let expected = #"{"-1":0,"+1":0,"001":0,"01":0,"1":0,"2":0}"#
    for rotation in keys.indices {
      let rotated = Array(keys[rotation...] + keys[..<rotation])
      #expect(ObjectBuffer.dictionaryOrder(of: rotated).map { rotated[$0] } == ["-1", "+1", "001", "01", "1", "2"])
    }
    let dictionary = Dictionary(uniqueKeysWithValues: keys.map { ($0, 0) })
    #expect(try JSONValueEncoder().encode(dictionary).formatted(.compact) == expected)
    #expect(try JSONValueEncoder().encodeBytes(dictionary) == Array(expected.utf8))
  }

  @Test func nestedStructsRoundTrip() throws {
    let config = Config(
      name: "demo", server: Server(host: "localhost", port: 8080),
      servers: [Server(host: "a", port: 1), Server(host: "b", port: 2)],
      tags: ["x", "y"], ratio: 0.25, enabled: true, retries: 3)
    let json = try encode(config)
    let expected: JSONValue = [
      "name": "demo", "server": ["host": "localhost", "port": 8080],
      "servers": [["host": "a", "port": 1], ["host": "b", "port": 2]],
      "tags": ["x", "y"], "ratio": 0.25, "enabled": true, "retries": 3,
    ]
    #expect(json == expected)
    #expect(json.objectValue?.keys == ["name", "server", "servers", "tags", "ratio", "enabled", "retries"])
    #expect(try decode(Config.self, json) == config)
  }

  @Test func keysKeepCodingKeysOrder() throws {
    let json = try encode(Ordered())
    #expect(json.objectValue?.keys == ["zebra", "apple", "mango", "nested"])
    #expect(json.objectValue?["nested"]?.objectValue?.keys == ["y", "b"])
    #expect(try decode(Ordered.self, json) == Ordered())
  }

  @Test func encodingAKeyTwiceReplacesItInPlace() throws {
    struct Twice: Encodable {
      enum Keys: String, CodingKey { case a, b }
      func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(1, forKey: .a)
        try container.encode("b", forKey: .b)
        try container.encode(["replaced"], forKey: .a)
      }
    }
    let json = try encode(Twice())
    #expect(json.objectValue?.keys == ["a", "b"])
    #expect(json == ["a": ["replaced"], "b": "b"])
  }

  @Test func largeObjectsReplaceAndLookUpThroughTheIndex() throws {
    struct Many: Encodable {
      func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: JSONCodingKey.self)
        for i in 0..<100 { try container.encode(i, forKey: JSONCodingKey(stringValue: "k\(i)")) }
        try container.encode(-1, forKey: JSONCodingKey(stringValue: "k50"))
      }
    }
    let object = try #require(try encode(Many()).objectValue)
    #expect(object.count == 100)
    #expect(object.keys[50] == "k50")
    #expect(object["k50"] == -1)
  }

  @Test func enumsWithRawValuesAndAssociatedValues() throws {
    #expect(try encode(Level.high) == "high")
    #expect(try encode(Priority.two) == 2)
    #expect(try decode(Level.self, "low") == .low)
    #expect(try decode(Priority.self, 1) == .one)
    #expect(throws: DecodingError.self) { try decode(Level.self, "medium") }

    #expect(try encode(Shape.circle(radius: 1.5)) == ["circle": ["radius": 1.5]])
    #expect(try encode(Shape.labeled("x")) == ["labeled": ["_0": "x"]])
    #expect(try encode(Shape.none) == ["none": [:]])
    let shapes: [Shape] = [.circle(radius: 2), .rect(width: 3, height: 4), .labeled("hi"), .none]
    #expect(try decode([Shape].self, encode(shapes)) == shapes)
  }

  @Test func optionalsPresentMissingAndNull() throws {
    let empty = Optionals()
    #expect(try encode(empty) == [:])
    let full = Optionals(count: 0, name: "n", server: Server(host: "h", port: 1))
    #expect(try encode(full) == ["count": 0, "name": "n", "server": ["host": "h", "port": 1]])
    #expect(try decode(Optionals.self, [:]) == empty)
    #expect(try decode(Optionals.self, ["count": nil, "name": nil, "server": nil]) == empty)
    #expect(try decode(Optionals.self, encode(full)) == full)

    struct ExplicitNil: Encodable {
      enum Keys: String, CodingKey { case gone }
      func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encodeNil(forKey: .gone)
      }
    }
    #expect(try encode(ExplicitNil()) == ["gone": nil])
    #expect(try encode([1, nil, 3] as [Int?]) == [1, nil, 3])
    #expect(try decode([Int?].self, [1, nil, 3]) == [1, nil, 3])
    #expect(try encode(nil as Int?) == nil)
  }

  @Test func arrays() throws {
    #expect(try encode([[1, 2], [], [3]] as [[Int]]) == [[1, 2], [], [3]])
    #expect(try decode([[Int]].self, [[1, 2], [], [3]]) == [[1, 2], [], [3]])
    #expect(try encode([String]()) == [])
    #expect(try decode(Set<Int>.self, [3, 1, 2]) == [1, 2, 3])
  }

  @Test func dictionariesWithStringKeysAreSortedObjects() throws {
    let dictionary = ["b": 2, "a": 1, "c": 3]
    let json = try encode(dictionary)
    #expect(json.objectValue?.keys == ["a", "b", "c"])
    #expect(try decode([String: Int].self, json) == dictionary)
    let big = Dictionary(uniqueKeysWithValues: (0..<500).map { ("key\($0)", $0) })
    let bigJSON = try encode(big)
    #expect(bigJSON.objectValue?.keys == big.keys.sorted())
    #expect(try decode([String: Int].self, bigJSON) == big)
  }

  @Test func dictionariesWithIntKeysUseStringMemberNamesInNumericOrder() throws {
    let dictionary = [10: "ten", 2: "two", -1: "minus one"]
    let json = try encode(dictionary)
    #expect(json == ["10": "ten", "2": "two", "-1": "minus one"])
    #expect(json.objectValue?.keys == ["-1", "2", "10"])
    #expect(try decode([Int: String].self, json) == dictionary)
    #expect(throws: DecodingError.self) { try decode([Int: String].self, ["x": "y"]) }
  }

  @Test func dictionariesWithCodingKeyRepresentableKeysAreObjects() throws {
    let dictionary: [Color: Int] = [.red: 1, .green: 2]
    let json = try encode(dictionary)
    #expect(json == ["red": 1, "green": 2])
    #expect(try decode([Color: Int].self, json) == dictionary)
  }

  @Test func dictionariesWithOtherKeysAreAlternatingArrays() throws {
    // What the standard library's Dictionary asks for, and Foundation's JSONEncoder writes.
    let single = [Point(x: 1, y: 2): "p"]
    #expect(try encode(single) == [["x": 1, "y": 2], "p"])
    let several = [Point(x: 1, y: 2): "p", Point(x: 3, y: 4): "q", Point(x: 5, y: 6): "r"]
    let json = try encode(several)
    #expect(json.arrayValue?.count == 6)
    #expect(try decode([Point: String].self, json) == several)
    #expect(try decode([UInt8: Bool].self, [1, true, 2, false]) == [1: true, 2: false])
  }

  @Test(arguments: [
    (1_795_986_324.0, "2026-11-29T21:05:24Z"),
    (1_795_986_324.123, "2026-11-29T21:05:24.123Z"),
    (1_795_986_324.5, "2026-11-29T21:05:24.5Z"),
    (1_795_986_324.000001, "2026-11-29T21:05:24.000001Z"),
    (0, "1970-01-01T00:00:00Z"),
    (-1, "1969-12-31T23:59:59Z"),
    (-0.5, "1969-12-31T23:59:59.5Z"),
    (951_782_400, "2000-02-29T00:00:00Z"),
    (-62_167_219_200, "0000-01-01T00:00:00Z"),
    (253_402_300_799, "9999-12-31T23:59:59Z"),
  ])
  func datesAsISO8601(seconds: Double, text: String) throws {
    let date = Date(timeIntervalSince1970: seconds)
    #expect(try encode(date) == .string(text))
    let decoded = try decode(Date.self, .string(text))
    #expect(abs(decoded.timeIntervalSince1970 - seconds) < 1e-6)
  }

  @Test func iso8601AgreesWithFoundationsFormatter() throws {
    let style = Date.ISO8601FormatStyle()
    // Foundation switches to the Julian calendar before 1582-10-15; ISO 8601 does not. The
    // step is prime, so the samples land on every time of day and every day of the month.
    for whole in stride(from: Int64(-12_212_553_600), through: 253_402_300_799, by: 132_607_391) {
      let seconds = Double(whole)
      let date = Date(timeIntervalSince1970: seconds)
      let text = try #require(ISO8601Timestamp.string(from: date))
      #expect(text == style.format(date))
      #expect(ISO8601Timestamp.date(from: text) == date)
    }
  }

  @Test func iso8601DecodingAcceptsOffsetsAndFractions() throws {
    let expected = Date(timeIntervalSince1970: 1_795_986_324.123)
    for text in [
      "2026-11-29T21:05:24.123Z", "2026-11-29T22:05:24.123+01:00", "2026-11-29T15:35:24.123-05:30",
      "2026-11-29T22:05:24.123+0100", "2026-11-29t21:05:24.123z", "2026-11-29T21:05:24.123000000Z",
    ] {
      #expect(try decode(Date.self, .string(text)) == expected, "\(text)")
    }
    #expect(try decode(Date.self, "2026-11-30T00:05:24+03:00") == Date(timeIntervalSince1970: 1_795_986_324))
    for bad in [
      "2026-11-29", "2026-11-29T21:05:24", "2026-02-29T00:00:00Z", "2026-13-01T00:00:00Z",
      "2026-11-29T24:00:00Z", "2026-11-29T21:05:24.Z", "2026-11-29T21:05:24+1", "2026-11-29T21:05:24Zjunk",
    ] {
      let error = decodingError { _ = try decode(Date.self, .string(bad)) }
      guard case .dataCorrupted? = error else {
        Issue.record("\(bad) gave \(String(describing: error))")
        continue
      }
    }
    #expect(try decode(Date.self, "2024-02-29T12:00:00Z") == Date(timeIntervalSince1970: 1_709_208_000))
  }

  @Test func otherDateStrategies() throws {
    let date = Date(timeIntervalSince1970: 1_795_986_324.5)
    var encoder = JSONValueEncoder()
    var decoder = JSONValueDecoder()

    encoder.dateEncodingStrategy = .secondsSince1970
    decoder.dateDecodingStrategy = .secondsSince1970
    #expect(try encode(date, with: encoder).numberValue?.text == "1795986324.5")
    #expect(try decode(Date.self, encode(date, with: encoder), with: decoder) == date)

    encoder.dateEncodingStrategy = .millisecondsSince1970
    decoder.dateDecodingStrategy = .millisecondsSince1970
    #expect(try encode(date, with: encoder).numberValue?.text == "1795986324500")
    #expect(try decode(Date.self, encode(date, with: encoder), with: decoder) == date)

    encoder.dateEncodingStrategy = .deferredToDate
    decoder.dateDecodingStrategy = .deferredToDate
    #expect(try encode(date, with: encoder) == .number(JSONNumber(date.timeIntervalSinceReferenceDate)))
    #expect(try decode(Date.self, encode(date, with: encoder), with: decoder) == date)

    encoder.dateEncodingStrategy = .custom { date, encoder in
      var container = encoder.singleValueContainer()
      try container.encode("day \(Int(date.timeIntervalSince1970) / 86_400)")
    }
    decoder.dateDecodingStrategy = .custom { decoder in
      let text = try decoder.singleValueContainer().decode(String.self)
      return Date(timeIntervalSince1970: Double(Int(text.dropFirst(4))! * 86_400))
    }
    #expect(try encode(["when": date], with: encoder) == ["when": "day 20786"])
    #expect(try decode(Date.self, "day 1", with: decoder) == Date(timeIntervalSince1970: 86_400))
  }

  @Test func dataAndURL() throws {
    let bytes = Data([0, 1, 2, 255])
    #expect(try encode(bytes) == "AAEC/w==")
    #expect(try decode(Data.self, "AAEC/w==") == bytes)
    let error = decodingError { _ = try decode(Data.self, "not base64!") }
    guard case .dataCorrupted? = error else {
      Issue.record("expected dataCorrupted, got \(String(describing: error))")
      return
    }
    var encoder = JSONValueEncoder()
    encoder.dataEncodingStrategy = .deferredToData
    var decoder = JSONValueDecoder()
    decoder.dataDecodingStrategy = .deferredToData
    #expect(try encode(bytes, with: encoder) == [0, 1, 2, 255])
    #expect(try decode(Data.self, [0, 1, 2, 255], with: decoder) == bytes)
    encoder.dataEncodingStrategy = .custom { data, encoder in
      var container = encoder.singleValueContainer()
      try container.encode(data.count)
    }
    #expect(try encode(["d": bytes], with: encoder) == ["d": 4])

    let url = try #require(URL(string: "https://example.com/a?b=1#c"))
    #expect(try encode(["u": url]) == ["u": "https://example.com/a?b=1#c"])
    #expect(try decode([String: URL].self, ["u": "https://example.com/a?b=1#c"]) == ["u": url])
    #expect(throws: DecodingError.self) { try decode(URL.self, 5) }
  }

  @Test func everyIntegerWidthAtItsLimits() throws {
    try checkLimits(Int.self)
    try checkLimits(Int8.self)
    try checkLimits(Int16.self)
    try checkLimits(Int32.self)
    try checkLimits(Int64.self)
    try checkLimits(Int128.self)
    try checkLimits(UInt.self)
    try checkLimits(UInt8.self)
    try checkLimits(UInt16.self)
    try checkLimits(UInt32.self)
    try checkLimits(UInt64.self)
    try checkLimits(UInt128.self)
  }

  private func checkLimits<I: FixedWidthInteger & Codable>(_ type: I.Type) throws {
    for value in [I.min, I.max, 0] {
      // Single value, unkeyed and keyed containers.
      let json = try encode(value)
      #expect(json.numberValue?.text == String(value))
      #expect(try decode(I.self, json) == value)
      #expect(try decode([I].self, encode([value])) == [value])
      #expect(try decode([String: I].self, encode(["v": value])) == ["v": value])
    }
    let tooBig = JSONValue.number(JSONNumber(text: String(I.max) + "0")!)
    let error = decodingError { _ = try decode(I.self, tooBig) }
    guard case .dataCorrupted(let context)? = error else {
      Issue.record("\(I.self): expected dataCorrupted, got \(String(describing: error))")
      return
    }
    #expect(context.debugDescription == "number \(I.max)0 does not fit in \(I.self)")
  }

  @Test func integerDecodingNeedsAnExactIntegerInRange() throws {
    #expect(try decode(Int.self, .number(JSONNumber(text: "1e3")!)) == 1000)
    #expect(try decode(Int.self, .number(JSONNumber(text: "1000.0")!)) == 1000)
    #expect(try decode(Int8.self, .number(JSONNumber(text: "-1.28e2")!)) == -128)
    #expect(try decode(UInt8.self, .number(JSONNumber(text: "-0")!)) == 0)
    let cases: [(JSONValue, String)] = [
      (.number(JSONNumber(text: "1.5")!), "number 1.5 is not an integer (expected UInt8)"),
      (300, "number 300 does not fit in UInt8"),
      (-1, "number -1 does not fit in UInt8"),
      (.number(JSONNumber(text: "1e400")!), "number 1e400 does not fit in UInt8"),
      (.number(JSONNumber(text: "2.56e2")!), "number 2.56e2 does not fit in UInt8"),
    ]
    for (json, message) in cases {
      let error = decodingError { _ = try decode([String: UInt8].self, ["small": json]) }
      #expect(error?.readableDescription == "small: " + message)
    }
  }

  @Test(arguments: [
    0.1, 1e300, -1e300, Double.leastNonzeroMagnitude, Double.leastNormalMagnitude.nextDown, Double.leastNormalMagnitude,
    Double.greatestFiniteMagnitude, 1e15, 123456.789, -0.5,
  ])
  func doublesRoundTrip(value: Double) throws {
    let json = try encode(value)
    #expect(Double(try #require(json.numberValue).text) == value)
    #expect(try decode(Double.self, json).bitPattern == value.bitPattern)
  }

  @Test func doubleAndFloatSpellings() throws {
    #expect(try encode(0.1).numberValue?.text == "0.1")
    #expect(try encode(2.0).numberValue?.text == "2")
    #expect(try encode(1e300).numberValue?.text == "1e+300")
    #expect(try encode(-0.0).numberValue?.text == "-0")
    #expect(try decode(Double.self, encode(-0.0)).sign == .minus)
    #expect(try encode(Float(0.1)).numberValue?.text == "0.1")
    #expect(try encode(Float(3)).numberValue?.text == "3")
    #expect(try decode(Float.self, 0.1) == Float(0.1))
    #expect(try decode(Float.self, encode(Float.leastNonzeroMagnitude)) == Float.leastNonzeroMagnitude)
    #expect(try decode(Double.self, 3) == 3)
    let error = decodingError { _ = try decode(Float.self, .number(JSONNumber(text: "1e300")!)) }
    guard case .dataCorrupted? = error else {
      Issue.record("expected dataCorrupted, got \(String(describing: error))")
      return
    }
  }

  @Test func nonFiniteFloatsThrowWithTheirPathOrBecomeStrings() throws {
    struct Limits: Codable, Equatable { var ratio: Double; var scale: Float }
    struct Outer: Codable, Equatable { var limits: Limits }
    let value = Outer(limits: Limits(ratio: .infinity, scale: -.infinity))
    do {
      _ = try encode(value)
      Issue.record("expected an error")
    } catch let error as EncodingError {
      guard case .invalidValue(_, let context) = error else { throw error }
      #expect(pathText(context.codingPath) == "limits.ratio")
      #expect(error.readableDescription.hasPrefix("limits.ratio: Double.infinity has no JSON spelling"))
    }
    #expect(throws: EncodingError.self) { try encode([1.0, .nan]) }

    var encoder = JSONValueEncoder()
    encoder.nonConformingFloatEncodingStrategy = .convertToString(
      positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
    let json = try encode(value, with: encoder)
    #expect(json == ["limits": ["ratio": "Infinity", "scale": "-Infinity"]])
    var decoder = JSONValueDecoder()
    decoder.nonConformingFloatDecodingStrategy = .convertFromString(
      positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
    #expect(try decode(Outer.self, json, with: decoder) == value)
    #expect(try decode(Double.self, "NaN", with: decoder).isNaN)
    #expect(throws: DecodingError.self) { try decode(Outer.self, json) }
  }

  @Test func classHierarchiesWithSuperEncoder() throws {
    let dog = Dog(name: "Rex", breed: "collie")
    let json = try encode(dog)
    #expect(json == ["breed": "collie", "super": ["name": "Rex"]])
    #expect(json.objectValue?.keys == ["breed", "super"])
    let decoded = try decode(Dog.self, json)
    #expect(decoded.name == "Rex" && decoded.breed == "collie")

    let cat = Cat(name: "Tom", lives: 9)
    let catJSON = try encode(cat)
    #expect(catJSON == ["lives": 9, "name": "Tom"])
    let decodedCat = try decode(Cat.self, catJSON)
    #expect(decodedCat.name == "Tom" && decodedCat.lives == 9)

    // Super encoders inside arrays, and a missing super member decodes from null.
    #expect(try encode([dog]) == [["breed": "collie", "super": ["name": "Rex"]]])
    #expect(throws: DecodingError.self) { try decode(Dog.self, ["breed": "x"]) }
  }

  @Test func nestedContainersByHand() throws {
    let value = Manual(a: 1, list: ["x", "y"], pairs: [[1, 2], [3]], extra: "e")
    let json = try encode(value)
    #expect(json == ["meta": ["a": 1, "extra": "e"], "list": ["x", "y"], "pairs": [[1, 2], [3]], "rest": [["extra": "e"]]])
    #expect(try decode(Manual.self, json) == value)
  }

  @Test func errorsNameTheCodingPath() throws {
    let good: JSONValue = [
      "name": "n", "server": ["host": "h", "port": 1], "servers": [["host": "a", "port": 1], ["host": "b", "port": 2]],
      "tags": [], "ratio": 1, "enabled": true, "retries": 1,
    ]
    func failure(_ edit: (inout JSONObject) -> Void) -> DecodingError? {
      var object = good.objectValue!
      edit(&object)
      return decodingError { _ = try decode(Config.self, .object(object)) }
    }

    let wrongType = failure { $0["server"] = ["host": "h", "port": "80"] }
    guard case .typeMismatch(let type, let context)? = wrongType else {
      Issue.record("got \(String(describing: wrongType))")
      return
    }
    #expect(ObjectIdentifier(type) == ObjectIdentifier(Int.self))
    #expect(pathText(context.codingPath) == "server.port")
    #expect(wrongType?.readableDescription == #"server.port: expected Int, found string "80""#)

    let inArray = failure { $0["servers"] = [["host": "a", "port": 1], ["host": "b", "port": "80"]] }
    #expect(inArray?.readableDescription == #"servers.1.port: expected Int, found string "80""#)

    let missing = failure { $0["servers"] = [["host": "a", "port": 1], ["port": 2]] }
    guard case .keyNotFound(let key, let missingContext)? = missing else {
      Issue.record("got \(String(describing: missing))")
      return
    }
    #expect(key.stringValue == "host")
    #expect(pathText(missingContext.codingPath) == "servers.1")
    #expect(missing?.readableDescription == "servers.1.host: missing key 'host'")

    let null = failure { $0["name"] = JSONValue.null }
    guard case .valueNotFound(_, let nullContext)? = null else {
      Issue.record("got \(String(describing: null))")
      return
    }
    #expect(pathText(nullContext.codingPath) == "name")
    #expect(null?.readableDescription == "name: expected String, found null")

    let inStringArray = failure { $0["tags"] = ["a", 5] }
    #expect(inStringArray?.readableDescription == "tags.1: expected String, found number 5")

    let inDictionary = decodingError { _ = try decode([String: [Server]].self, ["east": [["host": "h", "port": 1.5]]]) }
    #expect(inDictionary?.readableDescription == "east.0.port: number 1.5 is not an integer (expected Int)")

    let overflow = failure { $0["retries"] = 300 }
    #expect(overflow?.readableDescription == "retries: number 300 does not fit in UInt8")

    let wrongContainer = failure { $0["server"] = "localhost" }
    #expect(wrongContainer?.readableDescription == #"server: expected Server (an object), found string "localhost""#)

    let nullStruct = failure { $0["server"] = JSONValue.null }
    guard case .valueNotFound? = nullStruct else {
      Issue.record("got \(String(describing: nullStruct))")
      return
    }

    let missingTopLevelKey = decodingError { _ = try decode(Point.self, [:]) }
    #expect(missingTopLevelKey?.readableDescription == "x: missing key 'x'")
    let topLevel = decodingError { _ = try decode(Int.self, "1") }
    #expect(topLevel?.readableDescription == #"expected Int, found string "1""#)
  }

  @Test func readableDescriptionQuotesAmbiguousKeys() {
    let error = DecodingError.dataCorrupted(
      DecodingError.Context(
        codingPath: [JSONCodingKey(stringValue: "labels"), JSONCodingKey(stringValue: "app.kubernetes.io/name"), JSONCodingKey(intValue: 2)],
        debugDescription: "bad"))
    #expect(error.readableDescription == #"labels."app.kubernetes.io/name".2: bad"#)
  }

  @Test func unkeyedContainerEndAndTopLevelPrimitives() throws {
    struct Pair: Decodable {
      var first: Int
      var second: Int
      init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        first = try container.decode(Int.self)
        second = try container.decode(Int.self)
      }
    }
    let error = decodingError { _ = try decode([String: Pair].self, ["p": [1]]) }
    guard case .valueNotFound(_, let context)? = error else {
      Issue.record("got \(String(describing: error))")
      return
    }
    #expect(pathText(context.codingPath) == "p.1")
    #expect(try encode("text") == "text")
    #expect(try encode(true) == true)
    #expect(try decode(String.self, "text") == "text")
  }

  @Test func misuseAndEmptyValuesThrowInsteadOfTrapping() throws {
    struct Nothing: Encodable {
      func encode(to encoder: any Encoder) throws {}
    }
    #expect(throws: EncodingError.self) { try encode(Nothing()) }
    // Nested, an empty encode gives an empty object, as in Foundation.
    #expect(try encode(["n": Nothing()]) == ["n": [:]])

    struct Confused: Encodable {
      enum Keys: String, CodingKey { case a }
      func encode(to encoder: any Encoder) throws {
        var keyed = encoder.container(keyedBy: Keys.self)
        try keyed.encode(1, forKey: .a)
        var unkeyed = encoder.unkeyedContainer()
        try unkeyed.encode(2)
      }
    }
    #expect(throws: EncodingError.self) { try encode(Confused()) }
  }

  @Test func userInfoAndCodingPathReachTheTypes() throws {
    let key = try #require(CodingUserInfoKey(rawValue: "unit"))
    struct Probe: Codable {
      var path: String
      init(path: String) { self.path = path }
      init(from decoder: any Decoder) throws {
        path = readableCodingPath(decoder.codingPath) + "|" + String(describing: decoder.userInfo[CodingUserInfoKey(rawValue: "unit")!] ?? "")
      }
      func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(readableCodingPath(encoder.codingPath) + "|" + String(describing: encoder.userInfo[CodingUserInfoKey(rawValue: "unit")!] ?? ""))
      }
    }
    var encoder = JSONValueEncoder()
    encoder.userInfo[key] = "cm"
    var decoder = JSONValueDecoder()
    decoder.userInfo[key] = "mm"
    #expect(try encode(["a": [Probe(path: "")]], with: encoder) == ["a": ["a.0|cm"]])
    #expect(try decode([String: [Probe]].self, ["a": [0, 0]], with: decoder).mapValues { $0.map(\.path) } == ["a": ["a.0|mm", "a.1|mm"]])
  }
}
