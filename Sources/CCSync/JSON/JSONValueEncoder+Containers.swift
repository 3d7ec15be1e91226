/// A part of the tree being encoded. Containers fill reference-type buffers, so a nested
/// container can keep growing after its parent recorded it, and nothing is copied until
/// ``jsonValue`` assembles the finished tree once, at the end.
enum EncodingNode {
  case value(JSONValue)
  case object(ObjectBuffer)
  case array(ArrayBuffer)
  /// Whatever a super encoder ends up encoding (an empty object if nothing).
  case deferred(JSONValueEncoderImpl)

  /// The finished JSON value.
  var jsonValue: JSONValue {
    switch self {
    case .value(let value):
      return value
    case .object(let buffer):
      var members: [JSONObject.Member] = []
      members.reserveCapacity(buffer.keys.count)
      for position in buffer.keys.indices {
        members.append(JSONObject.Member(key: buffer.keys[position], value: buffer.nodes[position].jsonValue))
      }
      return .object(JSONObject(uniqueMembers: members))
    case .array(let buffer):
      return .array(buffer.nodes.map(\.jsonValue))
    case .deferred(let encoder):
      return encoder.storage?.jsonValue ?? .object(JSONObject())
    }
  }
}

/// The members of an object being encoded, unique by key, in the order first set.
final class ObjectBuffer {
  private(set) var keys: [String] = []
  private(set) var nodes: [EncodingNode] = []
  /// Key positions, kept once the object is too big for a linear scan (as `JSONObject` does).
  private var index: [String: Int]?

  private func position(of key: String) -> Int? {
    if let index { return index[key] }
    return keys.firstIndex(of: key)
  }

  /// Sets the member for `key`, replacing an earlier value where it stands.
  func set(_ key: String, _ node: EncodingNode) {
    if let position = position(of: key) {
      nodes[position] = node
      return
    }
    keys.append(key)
    nodes.append(node)
    if index != nil {
      index![key] = keys.count - 1
    } else if keys.count > JSONObject.indexThreshold {
      var newIndex = [String: Int](minimumCapacity: keys.count * 2)
      for (position, key) in keys.enumerated() { newIndex[key] = position }
      index = newIndex
    }
  }

  func node(forKey key: String) -> EncodingNode? {
    position(of: key).map { nodes[$0] }
  }

  /// Sorts the members numerically when every key is an integer, otherwise by key.
  func sortMembersByKey() {
    guard keys.count > 1 else { return }
    var order = Array(keys.indices)
    let numbers = keys.map { Int($0) }
    if numbers.allSatisfy({ $0 != nil }) {
      order.sort { numbers[$0]! < numbers[$1]! }
    } else {
      order.sort { keys[$0] < keys[$1] }
    }
    keys = order.map { keys[$0] }
    nodes = order.map { nodes[$0] }
    if index != nil {
      for (position, key) in keys.enumerated() { index![key] = position }
    }
  }
}

/// The elements of an array being encoded.
final class ArrayBuffer {
  var nodes: [EncodingNode] = []
}

struct JSONKeyedEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
  let encoder: JSONValueEncoderImpl
  let buffer: ObjectBuffer
  let pathNode: CodingPathNode

  var codingPath: [any CodingKey] { pathNode.path }

  mutating func encodeNil(forKey key: Key) { buffer.set(key.stringValue, .value(.null)) }
  mutating func encode(_ value: Bool, forKey key: Key) { buffer.set(key.stringValue, .value(.bool(value))) }
  mutating func encode(_ value: String, forKey key: Key) { buffer.set(key.stringValue, .value(.string(value))) }
  mutating func encode(_ value: Double, forKey key: Key) throws {
    buffer.set(key.stringValue, .value(try encoder.box(value, parent: pathNode, step: .key(key))))
  }
  mutating func encode(_ value: Float, forKey key: Key) throws {
    buffer.set(key.stringValue, .value(try encoder.box(value, parent: pathNode, step: .key(key))))
  }
  mutating func encode(_ value: Int, forKey key: Key) { setInteger(value, key) }
  mutating func encode(_ value: Int8, forKey key: Key) { setInteger(value, key) }
  mutating func encode(_ value: Int16, forKey key: Key) { setInteger(value, key) }
  mutating func encode(_ value: Int32, forKey key: Key) { setInteger(value, key) }
  mutating func encode(_ value: Int64, forKey key: Key) { setInteger(value, key) }
  mutating func encode(_ value: Int128, forKey key: Key) { setInteger(value, key) }
  mutating func encode(_ value: UInt, forKey key: Key) { setInteger(value, key) }
  mutating func encode(_ value: UInt8, forKey key: Key) { setInteger(value, key) }
  mutating func encode(_ value: UInt16, forKey key: Key) { setInteger(value, key) }
  mutating func encode(_ value: UInt32, forKey key: Key) { setInteger(value, key) }
  mutating func encode(_ value: UInt64, forKey key: Key) { setInteger(value, key) }
  mutating func encode(_ value: UInt128, forKey key: Key) { setInteger(value, key) }

  mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
    buffer.set(key.stringValue, try encoder.wrap(value, parent: pathNode, step: .key(key)))
  }

  private func setInteger<Integer: BinaryInteger>(_ value: Integer, _ key: Key) {
    buffer.set(key.stringValue, .value(.number(JSONNumber(value))))
  }

  mutating func nestedContainer<NestedKey: CodingKey>(
    keyedBy keyType: NestedKey.Type, forKey key: Key
  ) -> KeyedEncodingContainer<NestedKey> {
    let nested: ObjectBuffer
    if case .object(let existing)? = buffer.node(forKey: key.stringValue) {
      nested = existing
    } else {
      nested = ObjectBuffer()
      buffer.set(key.stringValue, .object(nested))
    }
    return KeyedEncodingContainer(
      JSONKeyedEncodingContainer<NestedKey>(encoder: encoder, buffer: nested, pathNode: pathNode.appending(key)))
  }

  mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
    let nested: ArrayBuffer
    if case .array(let existing)? = buffer.node(forKey: key.stringValue) {
      nested = existing
    } else {
      nested = ArrayBuffer()
      buffer.set(key.stringValue, .array(nested))
    }
    return JSONUnkeyedEncodingContainer(encoder: encoder, buffer: nested, pathNode: pathNode.appending(key))
  }

  mutating func superEncoder() -> any Encoder { superEncoder(key: JSONCodingKey.superKey) }
  mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(key: key) }

  private func superEncoder(key: any CodingKey) -> any Encoder {
    let superEncoder = JSONValueEncoderImpl(state: encoder.state, pathNode: pathNode.appending(key))
    buffer.set(key.stringValue, .deferred(superEncoder))
    return superEncoder
  }
}

struct JSONUnkeyedEncodingContainer: UnkeyedEncodingContainer {
  let encoder: JSONValueEncoderImpl
  let buffer: ArrayBuffer
  let pathNode: CodingPathNode

  var codingPath: [any CodingKey] { pathNode.path }
  var count: Int { buffer.nodes.count }

  mutating func encodeNil() { buffer.nodes.append(.value(.null)) }
  mutating func encode(_ value: Bool) { buffer.nodes.append(.value(.bool(value))) }
  mutating func encode(_ value: String) { buffer.nodes.append(.value(.string(value))) }
  mutating func encode(_ value: Double) throws {
    buffer.nodes.append(.value(try encoder.box(value, parent: pathNode, step: .index(count))))
  }
  mutating func encode(_ value: Float) throws {
    buffer.nodes.append(.value(try encoder.box(value, parent: pathNode, step: .index(count))))
  }
  mutating func encode(_ value: Int) { appendInteger(value) }
  mutating func encode(_ value: Int8) { appendInteger(value) }
  mutating func encode(_ value: Int16) { appendInteger(value) }
  mutating func encode(_ value: Int32) { appendInteger(value) }
  mutating func encode(_ value: Int64) { appendInteger(value) }
  mutating func encode(_ value: Int128) { appendInteger(value) }
  mutating func encode(_ value: UInt) { appendInteger(value) }
  mutating func encode(_ value: UInt8) { appendInteger(value) }
  mutating func encode(_ value: UInt16) { appendInteger(value) }
  mutating func encode(_ value: UInt32) { appendInteger(value) }
  mutating func encode(_ value: UInt64) { appendInteger(value) }
  mutating func encode(_ value: UInt128) { appendInteger(value) }

  mutating func encode<T: Encodable>(_ value: T) throws {
    buffer.nodes.append(try encoder.wrap(value, parent: pathNode, step: .index(count)))
  }

  private func appendInteger<Integer: BinaryInteger>(_ value: Integer) {
    buffer.nodes.append(.value(.number(JSONNumber(value))))
  }

  mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
    -> KeyedEncodingContainer<NestedKey>
  {
    let nested = ObjectBuffer()
    let node = pathNode.appending(.index(count))
    buffer.nodes.append(.object(nested))
    return KeyedEncodingContainer(
      JSONKeyedEncodingContainer<NestedKey>(encoder: encoder, buffer: nested, pathNode: node))
  }

  mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
    let nested = ArrayBuffer()
    let node = pathNode.appending(.index(count))
    buffer.nodes.append(.array(nested))
    return JSONUnkeyedEncodingContainer(encoder: encoder, buffer: nested, pathNode: node)
  }

  mutating func superEncoder() -> any Encoder {
    let superEncoder = JSONValueEncoderImpl(state: encoder.state, pathNode: pathNode.appending(.index(count)))
    buffer.nodes.append(.deferred(superEncoder))
    return superEncoder
  }
}
