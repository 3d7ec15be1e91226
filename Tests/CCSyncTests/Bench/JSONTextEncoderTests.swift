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
@testable import CCSyncBench

// MARK: Fixtures

private struct Endpoint: Codable {
  var host: String
  var port: Int
  var secure: Bool?
}

private enum Mode: String, Codable { case fast, safe }

private enum Shape: Codable {
  case circle(radius: Double)
  case rect(width: Double, height: Float)
  case label(String)
  case none
}

private struct Everything: Codable {
  var name = "svc \"one\"\n\t東京 😀"
  var count = -42
  var small: Int8 = -8
  var wide: UInt64 = .max
  var huge: Int128 = -170_141_183_460_469_231_731_687_303_715_884_105_728
  var ratio = 0.1
  var scale: Float = 1.5
  var on = true
  var missing: String? = nil
  var mode = Mode.safe
  var endpoints = [Endpoint(host: "a", port: 1, secure: true), Endpoint(host: "b", port: 2)]
  var tags = ["x", "y"]
  var numbers = [3, 1, 2]
  var matrix = [[1.5, 2], [], [3]]
  var labels = ["zeta": "z", "alpha": "a", "mid": "m"]
  var byName = ["b": Endpoint(host: "h", port: 9), "a": Endpoint(host: "g", port: 8)]
  var byNumber = [10: "ten", 2: "two"]
  var shapes: [Shape] = [.circle(radius: 2), .rect(width: 1, height: 0.25), .label("l"), .none]
  var when = Date(timeIntervalSince1970: 1_700_000_000.5)
  var blob = Data([0, 1, 2, 250])
  var link = URL(string: "https://example.com/a?b=c")!
  var empty = Empty()
  var emptyList: [Int] = []
  var emptyMap: [String: Int] = [:]
  var optionalNested: Endpoint? = Endpoint(host: "o", port: 0)
}

private struct Empty: Codable {}

/// Writes nothing at all.
private struct Silent: Encodable {
  func encode(to encoder: any Encoder) throws {}
}

private struct HoldsSilent: Encodable {
  var before = 1
  var silent = Silent()
  var after = 2
}

/// Nested containers by hand, each finished before its parent goes on: one pass can write it.
private struct Nesting: Encodable {
  enum Keys: String, CodingKey { case meta, list, pairs, tail }
  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: Keys.self)
    var meta = container.nestedContainer(keyedBy: JSONCodingKey.self, forKey: .meta)
    try meta.encode(1, forKey: JSONCodingKey(stringValue: "a"))
    var list = container.nestedUnkeyedContainer(forKey: .list)
    try list.encode("x")
    var inner = list.nestedContainer(keyedBy: JSONCodingKey.self)
    try inner.encodeNil(forKey: JSONCodingKey(stringValue: "n"))
    var pairs = container.nestedUnkeyedContainer(forKey: .pairs)
    var pair = pairs.nestedUnkeyedContainer()
    try pair.encode(1)
    try pair.encode(2)
    _ = pairs.nestedUnkeyedContainer()
    try container.encode("end", forKey: .tail)
  }
}

/// Goes back to a nested container after its parent moved on: the tree's job.
private struct Revisits: Encodable {
  enum Keys: String, CodingKey { case meta, other }
  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: Keys.self)
    var meta = container.nestedContainer(keyedBy: JSONCodingKey.self, forKey: .meta)
    try meta.encode(1, forKey: JSONCodingKey(stringValue: "a"))
    try container.encode(2, forKey: .other)
    try meta.encode(3, forKey: JSONCodingKey(stringValue: "b"))
  }
}

private class Animal: Encodable {
  var name = "rex"
}

/// Encodes its superclass under `super`.
private final class Dog: Animal {
  var breed = "lab"
  private enum CodingKeys: String, CodingKey { case breed }
  override func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(breed, forKey: .breed)
    try super.encode(to: container.superEncoder())
  }
}

/// Shares its superclass's container: asks for it twice.
private final class Cat: Animal {
  var lives = 9
  private enum CodingKeys: String, CodingKey { case lives }
  override func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(lives, forKey: .lives)
    try super.encode(to: encoder)
  }
}

/// Keeps its keyed container and hands it to the value it encodes, which writes through it:
/// a container used from inside a nested value's `encode(to:)`.
private final class ContainerBox: @unchecked Sendable {
  var container: KeyedEncodingContainer<JSONCodingKey>?
}

private struct Parent: Encodable {
  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: JSONCodingKey.self)
    let box = ContainerBox()
    box.container = container  // a copy: the same container, reached through another variable
    try container.encode(1, forKey: JSONCodingKey(stringValue: "first"))
    try container.encode(Child(box: box), forKey: JSONCodingKey(stringValue: "child"))
    try container.encode(3, forKey: JSONCodingKey(stringValue: "last"))
  }
}

private struct Child: Encodable {
  let box: ContainerBox
  func encode(to encoder: any Encoder) throws {
    var own = encoder.container(keyedBy: JSONCodingKey.self)
    try own.encode("a", forKey: JSONCodingKey(stringValue: "a"))
    var parent = box.container!
    try parent.encode(2, forKey: JSONCodingKey(stringValue: "fromChild"))
    var nested = parent.nestedContainer(keyedBy: JSONCodingKey.self, forKey: JSONCodingKey(stringValue: "nested"))
    try nested.encode(true, forKey: JSONCodingKey(stringValue: "n"))
    // Its own container again, after the parent opened a new one where it stood.
    var again = encoder.container(keyedBy: JSONCodingKey.self)
    try again.encode("b", forKey: JSONCodingKey(stringValue: "b"))
  }
}

/// Asks for a keyed container after writing a single value.
private struct Confused: Encodable {
  func encode(to encoder: any Encoder) throws {
    var single = encoder.singleValueContainer()
    try single.encode(1)
    var keyed = encoder.container(keyedBy: JSONCodingKey.self)
    try keyed.encode(2, forKey: JSONCodingKey(stringValue: "a"))
  }
}

/// Any JSON value, through the containers a hand-written `encode(to:)` would use.
private struct AnyJSON: Encodable {
  var value: JSONValue
  func encode(to encoder: any Encoder) throws {
    switch value {
    case .object(let object):
      var container = encoder.container(keyedBy: JSONCodingKey.self)
      for member in object { try container.encode(AnyJSON(value: member.value), forKey: JSONCodingKey(stringValue: member.key)) }
    case .array(let elements):
      var container = encoder.unkeyedContainer()
      for element in elements { try container.encode(AnyJSON(value: element)) }
    case .string(let string):
      var container = encoder.singleValueContainer()
      try container.encode(string)
    case .number(let number):
      var container = encoder.singleValueContainer()
      if let integer = Int64(number.text) { try container.encode(integer) } else { try container.encode(Double(number.text)!) }
    case .bool(let bool):
      var container = encoder.singleValueContainer()
      try container.encode(bool)
    case .null:
      var container = encoder.singleValueContainer()
      try container.encodeNil()
    }
  }
}

// MARK: Tests

/// `encodeBytes` against the tree encoder and the printer: the same bytes, or the same error.
private func expectSameAsTree<T: Encodable>(
  _ value: T, with encoder: JSONValueEncoder = JSONValueEncoder(), sourceLocation: SourceLocation = #_sourceLocation
) {
  for style in [JSONFormat.compact, .pretty] {
    let expected = Result { try encoder.encode(value).formattedBytes(style) }
    let actual = Result { try encoder.encodeBytes(value, style: style) }
    switch (expected, actual) {
    case (.success(let expected), .success(let actual)):
      #expect(String(decoding: actual, as: UTF8.self) == String(decoding: expected, as: UTF8.self), sourceLocation: sourceLocation)
    case (.failure(let expected), .failure(let actual)):
      #expect("\(actual)" == "\(expected)", sourceLocation: sourceLocation)
    default:
      Issue.record("tree \(expected), one pass \(actual)", sourceLocation: sourceLocation)
    }
  }
}

/// Whether the value went through the single pass (not handed to the tree).
private func takesSinglePass<T: Encodable>(_ value: T, with encoder: JSONValueEncoder = JSONValueEncoder()) -> Bool {
  JSONTextEncoderImpl.encode(value, options: encoder, style: .compact) != nil
}

@Suite struct JSONTextEncoderTests {
  @Test func everyKindOfValueMatchesTheTreeInOnePass() {
    expectSameAsTree(Everything())
    #expect(takesSinglePass(Everything()))
    expectSameAsTree([Everything(), Everything()])
    expectSameAsTree(Nesting())
    #expect(takesSinglePass(Nesting()))
    expectSameAsTree(HoldsSilent())
    #expect(takesSinglePass(HoldsSilent()))
    expectSameAsTree(Cat())
    #expect(takesSinglePass(Cat()))
  }

  @Test func topLevelLeavesAndContainers() {
    expectSameAsTree("text")
    expectSameAsTree(7)
    expectSameAsTree(2.5)
    expectSameAsTree(true)
    expectSameAsTree(Optional<Int>.none)
    expectSameAsTree([1, 2])
    expectSameAsTree(["k": 1])
    expectSameAsTree(Empty())
    expectSameAsTree([[String]]())
    #expect(takesSinglePass("text") && takesSinglePass(Empty()) && takesSinglePass([Endpoint]()))
  }

  @Test func whatOnePassCannotWriteGoesThroughTheTree() {
    let cases: [any Encodable] = [
      Revisits(), KeySequence(keys: ["a", "b", "a"]), KeySequence(keys: ["é", "x", "é"]), Dog(), Confused(), Silent(),
      Parent(),
      // Equal keys with the same first and last bytes.
      KeySequence(keys: ["abc", "axc", "abc"]), KeySequence(keys: ["a\u{37E}", "b", "a\u{37E}"]),
    ]
    for value in cases {
      expectSameAsTree(value)
      let singlePass = takesSinglePass(value)
      #expect(!singlePass, "\(type(of: value))")
    }
    // Keys that differ only past their first byte, or are not ASCII, are still told apart;
    // so are canonically equivalent keys with other bytes (U+037E GREEK QUESTION MARK is
    // canonically `;`), which are other keys.
    expectSameAsTree(KeySequence(keys: ["ab", "ac", "é", "e\u{301}x", ""]))
    #expect(takesSinglePass(KeySequence(keys: ["ab", "ac", "é", "ü", ""])))
    for keys in [["a;", "b", "a\u{37E}"], ["a\u{37E}", "b", "a;"], ["\u{E9}", "e\u{301}"]] {
      expectSameAsTree(KeySequence(keys: keys))
      #expect(takesSinglePass(KeySequence(keys: keys)), "\(keys)")
    }
    expectSameAsTree(KeySequence(keys: (0..<100).map { "key\($0)" } + ["key7"]))
  }

  /// Keys of every length the printer copies by words, with a byte to escape at each place
  /// in turn, and non-ASCII bytes at either end.
  @Test(arguments: 0...40) func keysOfEveryShortLengthMatchTheTree(length: Int) {
    let plain = String(repeating: "k", count: length)
    var keys = [plain]
    for place in 0..<length {
      for special in ["\"", "\\", "\u{1}", "\n", "é"] {
        var characters = Array(plain)
        characters[place] = Character(special)
        keys.append(String(characters))
      }
    }
    expectSameAsTree(KeySequence(keys: keys))
    #expect(takesSinglePass(KeySequence(keys: keys)))
    // Every one of them again, after the others: the same key twice, for the tree.
    for key in keys.prefix(8) {
      #expect(!takesSinglePass(KeySequence(keys: keys + [key])))
    }
  }

  /// Integers around every power of ten, which the digit writer takes two at a time.
  @Test func integersAreSpelledAsSwiftSpellsThem() throws {
    var signed: [Int64] = [0, 1, -1, 9, -9, .max, .min]
    var unsigned: [UInt64] = [0, .max, .max - 1]
    var power: UInt64 = 10
    while true {
      unsigned += [power - 1, power, power + 1]
      if let exact = Int64(exactly: power) { signed += [exact - 1, exact, exact + 1, -exact + 1, -exact, -exact - 1] }
      guard power <= UInt64.max / 10 else { break }
      power *= 10
    }
    for value in signed {
      #expect(String(decoding: try JSONValueEncoder().encodeBytes(value), as: UTF8.self) == String(value))
      #expect(String(decoding: try JSONValueEncoder().encodeBytes(["n": Int(value)]), as: UTF8.self) == #"{"n":\#(value)}"#)
    }
    for value in unsigned {
      #expect(String(decoding: try JSONValueEncoder().encodeBytes(value), as: UTF8.self) == String(value))
      #expect(JSONNumber(integer: value).text == String(value))
    }
  }

  @Test func doublesStringArraysAndStringDictionariesMatchTheTree() {
    let doubles: [Double] = [
      0, -0.0, 1, -1, 2.5, -2.5, 1e15 - 1, 1e15, 1e16, -1e15, 0.1, 1e-7, 123.456,
      .greatestFiniteMagnitude, .leastNonzeroMagnitude, -.leastNormalMagnitude,
    ]
    expectSameAsTree(doubles)
    for double in doubles {
      expectSameAsTree(double)
      expectSameAsTree(["d": double])
      expectSameAsTree(Optional(double))
    }
    struct Texts: Encodable {
      var list: [String]
      var map: [String: String]
    }
    let maps: [[String: String]] = [
      [:], ["only": "one"], ["b": "2", "a": "1", "é": "e", "E": "\"q\""],
      // Integer keys sort as numbers, and keys equal as numbers keep the dictionary's order.
      ["10": "ten", "9": "nine", "01": "zero one", "1": "one", "-3": "minus", "+7": "plus"],
      ["10": "ten", "x": "not a number", "9": "nine"],
    ]
    for map in maps {
      expectSameAsTree(Texts(list: Array(map.keys), map: map))
      expectSameAsTree(map)
      #expect(takesSinglePass(Texts(list: Array(map.values), map: map)))
    }
    expectSameAsTree(Texts(list: [], map: [:]))
    expectSameAsTree([[String]](arrayLiteral: [], ["a", "b\n"]))
  }

  @Test func errorsAndStrategiesAreTheTrees() {
    struct Floats: Encodable { var values: [Double]; var single: Float }
    expectSameAsTree(Floats(values: [1, .infinity], single: 1))
    expectSameAsTree(Floats(values: [1], single: .nan))
    var converting = JSONValueEncoder()
    converting.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "+inf", negativeInfinity: "-inf", nan: "nan")
    expectSameAsTree(Floats(values: [-.infinity, .nan], single: .infinity), with: converting)
    #expect(takesSinglePass(Floats(values: [-.infinity], single: .nan), with: converting))
    var dates = JSONValueEncoder()
    for strategy: JSONValueEncoder.DateEncodingStrategy in [.secondsSince1970, .millisecondsSince1970, .deferredToDate] {
      dates.dateEncodingStrategy = strategy
      expectSameAsTree(Everything(), with: dates)
    }
    expectSameAsTree(Date(timeIntervalSince1970: -1e13))  // outside ISO 8601's years: an error
  }

  @Test func codingPathsSeenByEncodeToAreTheTrees() throws {
    struct PathRecorder: Encodable {
      let log: PathLog
      func encode(to encoder: any Encoder) throws {
        log.paths.append(encoder.codingPath.map(\.stringValue).joined(separator: "."))
        var container = encoder.singleValueContainer()
        try container.encode(log.paths.count)
      }
    }
    struct Holder: Encodable {
      let log: PathLog
      var list: [PathRecorder] { [PathRecorder(log: log), PathRecorder(log: log)] }
      func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: JSONCodingKey.self)
        try container.encode(PathRecorder(log: log), forKey: JSONCodingKey(stringValue: "one"))
        try container.encode(list, forKey: JSONCodingKey(stringValue: "list"))
      }
    }
    let treeLog = PathLog(), textLog = PathLog()
    _ = try JSONValueEncoder().encode(Holder(log: treeLog))
    _ = try JSONValueEncoder().encodeBytes(Holder(log: textLog))
    #expect(textLog.paths == treeLog.paths)
    #expect(textLog.paths.count == 3 && textLog.paths[0] == "one")
  }

  @Test func codingPathsOfContainersAreTheTrees() throws {
    /// Records the paths of its containers as it goes, nested ones asked while open.
    struct ContainerPaths: Encodable {
      let log: PathLog
      func record(_ path: [any CodingKey]) {
        log.paths.append(path.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: "."))
      }
      func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: JSONCodingKey.self)
        record(container.codingPath)
        var meta = container.nestedContainer(keyedBy: JSONCodingKey.self, forKey: JSONCodingKey(stringValue: "meta"))
        record(meta.codingPath)
        record(encoder.codingPath)  // the value's own path, not its nested container's
        try meta.encode(1, forKey: JSONCodingKey(stringValue: "a"))
        var list = meta.nestedUnkeyedContainer(forKey: JSONCodingKey(stringValue: "list"))
        try list.encode("x")
        var element = list.nestedContainer(keyedBy: JSONCodingKey.self)
        record(element.codingPath)
        var pair = element.nestedUnkeyedContainer(forKey: JSONCodingKey(stringValue: "pair"))
        record(pair.codingPath)
        try pair.encode(true)
        record(list.codingPath)
        try container.encode(Leaf(log: log), forKey: JSONCodingKey(stringValue: "leaf"))
        record(container.codingPath)
      }
    }
    struct Leaf: Encodable {
      let log: PathLog
      func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        log.paths.append(container.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: "."))
        try container.encode(1)
      }
    }
    struct Outer: Encodable {
      let log: PathLog
      func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        try container.encode(2)
        try container.encode(ContainerPaths(log: log))
      }
    }
    let treeLog = PathLog(), textLog = PathLog()
    let tree = try JSONValueEncoder().encode(Outer(log: treeLog)).formattedBytes(.compact)
    let text = try JSONValueEncoder().encodeBytes(Outer(log: textLog))
    #expect(text == tree)
    #expect(textLog.paths == treeLog.paths)
    #expect(textLog.paths == ["1", "1.meta", "1", "1.meta.list.1", "1.meta.list.1.pair", "1.meta.list", "1.leaf", "1"])
    #expect(takesSinglePass(Outer(log: PathLog())))
  }

  /// A container whose object was closed (its parent went on to the next member) cannot
  /// have its path told from the steps, which now lead to the sibling: asking for it hands
  /// the value to the tree, whose run sees the right path.
  @Test func askingAClosedContainerForItsPathGoesThroughTheTree() throws {
    struct AsksLate: Encodable {
      let log: PathLog
      func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: JSONCodingKey.self)
        let first = container.nestedContainer(keyedBy: JSONCodingKey.self, forKey: JSONCodingKey(stringValue: "first"))
        _ = container.nestedContainer(keyedBy: JSONCodingKey.self, forKey: JSONCodingKey(stringValue: "second"))
        log.paths.append(first.codingPath.map(\.stringValue).joined(separator: "."))
      }
    }
    #expect(!takesSinglePass(AsksLate(log: PathLog())))
    expectSameAsTree(AsksLate(log: PathLog()))
    let log = PathLog()
    _ = try JSONValueEncoder().encodeBytes(AsksLate(log: log))
    #expect(log.paths.last == "first")
  }

  @Test func optionalLeavesMatchTheTree() {
    /// Writes its optionals with `encode`, so `nil` is an explicit `null`.
    struct Optionals: Encodable {
      var string: String?
      var integer: Int?
      var bool: Bool?
      var double: Double?
      enum CodingKeys: CodingKey { case string, integer, bool, double, list }
      func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(string, forKey: .string)
        try container.encode(integer, forKey: .integer)
        try container.encode(bool, forKey: .bool)
        try container.encode(double, forKey: .double)
        var list = container.nestedUnkeyedContainer(forKey: .list)
        try list.encode(string)
        try list.encode(double)
      }
    }
    let some = Optionals(string: "s \"q\"", integer: -7, bool: false, double: 0.1)
    expectSameAsTree(some)
    expectSameAsTree(Optionals())
    expectSameAsTree([some, Optionals()])
    expectSameAsTree(Optional<String>.none)
    expectSameAsTree(Optional<Double>.some(2.5))
    #expect(takesSinglePass(some) && takesSinglePass(Optionals()))
    // No JSON spelling: the tree's error, with the tree's path.
    expectSameAsTree(Optionals(double: .infinity))
    var converting = JSONValueEncoder()
    converting.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "+inf", negativeInfinity: "-inf", nan: "nan")
    expectSameAsTree(Optionals(double: -.infinity), with: converting)
  }

  @Test func generatedDocumentsMatchTheTree() {
    var random = SeededJSONRandom(seed: 2026)
    for _ in 0..<300 {
      let value = AnyJSON(value: random.value(depth: 4))
      expectSameAsTree(value)
    }
  }
}

/// Collects coding paths (a class, so `encode(to:)` can append through a `let`).
private final class PathLog: @unchecked Sendable {
  var paths: [String] = []
}
