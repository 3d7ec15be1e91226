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

/// What `JSONValueDecoder`'s keyed and unkeyed containers do when types call them directly:
/// every integer width through every kind of container, and the coding path of errors and of
/// containers, including containers still in use after their parent has moved on.
@Suite struct JSONValueDecoderContainerTests {
  /// The error `body` throws, as a `DecodingError`; `nil` (and a recorded issue) otherwise.
  private func decodingError(_ body: () throws -> Void) -> DecodingError? {
    do {
      try body()
      Issue.record("expected a DecodingError, got none")
    } catch let error as DecodingError {
      return error
    } catch {
      Issue.record("expected a DecodingError, got \(error)")
    }
    return nil
  }

  private func parse(_ text: String) throws -> JSONValue { try JSONValue(parsing: Array(text.utf8)) }

  // MARK: Integers in keyed and unkeyed containers

  private struct Widths: Decodable, Equatable {
    var int8: Int8
    var uint16: UInt16
    var int32: Int32
    var uint32: UInt32
    var int64: Int64
    var uint64: UInt64
    var optional32: UInt32?
  }

  /// An `Int8`, a `UInt32` and a `UInt64` read from an array, kept as text.
  private struct WidthList: Decodable, Equatable {
    var values: [String]
    init(from decoder: any Decoder) throws {
      var container = try decoder.unkeyedContainer()
      let a = try container.decode(Int8.self)
      let b = try container.decode(UInt32.self)
      let c = try container.decode(UInt64.self)
      values = [String(a), String(b), String(c)]
    }
  }

  @Test func integersOfEveryWidthThroughKeyedContainers() throws {
    let json = try parse(
      #"{"int8": -128, "uint16": 65535, "int32": -5, "uint32": 4294967295, "int64": -9, "uint64": 18446744073709551615, "optional32": 7}"#)
    let expected = Widths(
      int8: -128, uint16: 65535, int32: -5, uint32: .max, int64: -9, uint64: .max, optional32: 7)
    #expect(try JSONValueDecoder().decode(Widths.self, from: json) == expected)
    // Other spellings of an integer go through the slower path and still decode.
    let spelled = try parse(
      #"{"int8": -1.28e2, "uint16": 6e1, "int32": 5.0, "uint32": 1e3, "int64": -9, "uint64": 2e1, "optional32": 1E2}"#)
    #expect(
      try JSONValueDecoder().decode(Widths.self, from: spelled)
        == Widths(int8: -128, uint16: 60, int32: 5, uint32: 1000, int64: -9, uint64: 20, optional32: 100))
  }

  @Test(arguments: [
    (#""uint32": 4294967296"#, "uint32: number 4294967296 does not fit in UInt32"),
    (#""uint32": -1"#, "uint32: number -1 does not fit in UInt32"),
    (#""uint64": 1.5"#, "uint64: number 1.5 is not an integer (expected UInt64)"),
    (#""int8": 128"#, "int8: number 128 does not fit in Int8"),
    (#""optional32": "7""#, #"optional32: expected UInt32, found string "7""#),
    (#""optional32": 1e10"#, "optional32: number 1e10 does not fit in UInt32"),
  ])
  func integerErrorsInKeyedContainersNameTheMember(member: String, message: String) throws {
    var fields = [
      #""int8": 1"#, #""uint16": 1"#, #""int32": 1"#, #""uint32": 1"#, #""int64": 1"#, #""uint64": 1"#,
    ]
    let name = String(member.prefix { $0 != ":" })
    fields.removeAll { $0.hasPrefix(name) }
    fields.append(member)
    let json = try parse("{" + fields.joined(separator: ", ") + "}")
    let error = decodingError { _ = try JSONValueDecoder().decode(Widths.self, from: json) }
    #expect(error?.readableDescription == message)
  }

  @Test func integersOfEveryWidthThroughUnkeyedContainers() throws {
    let json = try parse(#"{"a": [[-128, 4294967295, 18446744073709551615], [1, 2e3, 3]]}"#)
    let decoded = try JSONValueDecoder().decode([String: [WidthList]].self, from: json)
    #expect(decoded["a"]?.map(\.values) == [["-128", "4294967295", "18446744073709551615"], ["1", "2000", "3"]])
    let error = decodingError {
      _ = try JSONValueDecoder().decode([String: [WidthList]].self, from: parse(#"{"a": [[1, 2, 3], [1, -2, 3]]}"#))
    }
    #expect(error?.readableDescription == "a.1.1: number -2 does not fit in UInt32")
  }

  // MARK: Error paths at every depth

  private struct Node: Decodable {
    var name: String
    var tags: [String]
    var labels: [String: String]
    var children: [Node]
  }

  /// A `Node` document `depth` levels deep, with `leaf` as the innermost node's members.
  private func nested(depth: Int, leaf: String) -> String {
    var text = "{" + leaf + "}"
    for _ in 0..<depth {
      text = #"{"name": "n", "tags": [], "labels": {}, "children": [{"name": "a", "tags": [], "labels": {}, "children": []}, "#
        + text + "]}"
    }
    return text
  }

  @Test(arguments: 0...3)
  func stringArrayAndDictionaryErrorsCarryTheFullPath(depth: Int) throws {
    let prefix = String(repeating: "children.1.", count: depth)
    let cases: [(String, String)] = [
      (#""name": "x", "tags": ["a", 5], "labels": {}, "children": []"#, prefix + "tags.1: expected String, found number 5"),
      (#""name": "x", "tags": [null], "labels": {}, "children": []"#, prefix + "tags.0: expected String, found null"),
      (
        #""name": "x", "tags": [], "labels": {"a": "b", "app.kubernetes.io/name": true}, "children": []"#,
        prefix + #"labels."app.kubernetes.io/name": expected String, found boolean true"#
      ),
      (#""name": "x", "tags": {}, "labels": {}, "children": []"#, prefix + "tags: expected Array<String> (an array), found object"),
      (#""name": "x", "tags": [], "labels": [], "children": []"#, prefix + "labels: expected Dictionary<String, String> (an object), found array of 0 elements"),
      (#""name": "x", "tags": [], "labels": {}, "children": [], "extra": 1"#, ""),
    ]
    for (leaf, message) in cases {
      let json = try parse(nested(depth: depth, leaf: leaf))
      if message.isEmpty {
        #expect(throws: Never.self) { try JSONValueDecoder().decode(Node.self, from: json) }
        continue
      }
      let error = decodingError { _ = try JSONValueDecoder().decode(Node.self, from: json) }
      #expect(error?.readableDescription == message)
    }
  }

  @Test func stringCollectionsDecodeEveryElement() throws {
    let json = try parse(#"{"name": "x", "tags": ["a", "b", ""], "labels": {"k": "v", "": "e"}, "children": []}"#)
    let node = try JSONValueDecoder().decode(Node.self, from: json)
    #expect(node.tags == ["a", "b", ""])
    #expect(node.labels == ["k": "v", "": "e"])
    #expect(try JSONValueDecoder().decode([[String]].self, from: parse(#"[["a"], [], ["b", "c"]]"#)) == [["a"], [], ["b", "c"]])
    let error = decodingError { _ = try JSONValueDecoder().decode([[String]].self, from: parse(#"[["a"], ["b", 1]]"#)) }
    #expect(error?.readableDescription == "1.1: expected String, found number 1")
  }

  // MARK: Paths of containers

  /// Keeps the containers the types below were given, to use them after the decode moved on.
  private final class ContainerStash: @unchecked Sendable {
    // Unchecked: each test makes its own stash and uses it on one thread.
    var keyed: [KeyedDecodingContainer<Probe.Keys>] = []
    var unkeyed: [any UnkeyedDecodingContainer] = []
    var decoders: [any Decoder] = []
    static let key = CodingUserInfoKey(rawValue: "stash")!
  }

  /// Stashes its keyed container, one nested below it and one from an unkeyed container, and
  /// its super decoders.
  private struct Probe: Decodable {
    enum Keys: String, CodingKey { case x, inner, list, parent }
    init(from decoder: any Decoder) throws {
      let stash = decoder.userInfo[ContainerStash.key] as! ContainerStash
      let container = try decoder.container(keyedBy: Keys.self)
      stash.keyed.append(container)
      if container.contains(.inner) {
        stash.keyed.append(try container.nestedContainer(keyedBy: Keys.self, forKey: .inner))
      }
      if container.contains(.list) {
        var list = try container.nestedUnkeyedContainer(forKey: .list)
        stash.unkeyed.append(list)
        stash.keyed.append(try list.nestedContainer(keyedBy: Keys.self))
      }
      if container.contains(.parent) {
        stash.decoders.append(try container.superDecoder())
        stash.decoders.append(try container.superDecoder(forKey: .parent))
      }
    }
  }

  private func stashing(_ text: String, as type: (some Decodable).Type) throws -> ContainerStash {
    let stash = ContainerStash()
    var decoder = JSONValueDecoder()
    decoder.userInfo[ContainerStash.key] = stash
    _ = try decoder.decode(type, from: parse(text))
    return stash
  }

  @Test func containersKeepTheirPathAfterTheDecoderMovedOn() throws {
    let stash = try stashing(
      #"{"a": [{"x": 1}, {"x": 2, "inner": {"x": "i"}}], "b": {"c": {"x": 3, "list": [{"x": 4}]}}}"#,
      as: DocumentOfProbes.self)
    #expect(stash.keyed.map { readableCodingPath($0.codingPath) } == ["a.0", "a.1", "a.1.inner", "b.c", "b.c.list.0"])
    #expect(stash.unkeyed.map { readableCodingPath($0.codingPath) } == ["b.c.list"])
    // Their errors, long after the decode returned, carry the same paths.
    let messages = stash.keyed.map { container in
      decodingError { _ = try container.decode(Bool.self, forKey: .x) }?.readableDescription
    }
    #expect(
      messages == [
        "a.0.x: expected Bool, found number 1", "a.1.x: expected Bool, found number 2",
        #"a.1.inner.x: expected Bool, found string "i""#, "b.c.x: expected Bool, found number 3",
        "b.c.list.0.x: expected Bool, found number 4",
      ])
    let missing = decodingError { _ = try stash.keyed[3].decode(Int.self, forKey: .inner) }
    #expect(missing?.readableDescription == "b.c.inner: missing key 'inner'")
    let nested = decodingError { _ = try stash.keyed[1].decode([String: Probe].self, forKey: .inner) }
    #expect(nested?.readableDescription == #"a.1.inner.x: expected Probe (an object), found string "i""#)
  }

  @Test func superDecodersHaveTheirOwnPath() throws {
    let stash = try stashing(
      #"{"a": [{"x": 1}, {"x": 2, "parent": {"n": "p"}, "super": 7}], "b": {"c": {"x": 3}}}"#, as: DocumentOfProbes.self)
    #expect(stash.decoders.map { readableCodingPath($0.codingPath) } == ["a.1.super", "a.1.parent"])
    let superValue = try stash.decoders[0].singleValueContainer().decode(Int.self)
    #expect(superValue == 7)
    let wrong = decodingError { _ = try stash.decoders[0].singleValueContainer().decode(String.self) }
    #expect(wrong?.readableDescription == "a.1.super: expected String, found number 7")
    let inner = decodingError {
      let container = try stash.decoders[1].container(keyedBy: Probe.Keys.self)
      _ = try container.decode(Int.self, forKey: .x)
    }
    #expect(inner?.readableDescription == "a.1.parent.x: missing key 'x'")
  }

  private struct DocumentOfProbes: Decodable {
    var a: [Probe]
    var b: [String: Probe]
  }
}
