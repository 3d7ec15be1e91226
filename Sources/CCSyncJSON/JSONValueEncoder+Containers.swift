import CCSyncSystem

/// What an encoder's current value has produced: a finished value, or a container buffer
/// still being filled.
package enum EncoderStorage {
  case value(JSONValue)
  case object(ObjectBuffer)
  case array(ArrayBuffer)

  /// The finished JSON value.
  package func finish() -> JSONValue {
    switch self {
    case .value(let value): return value
    case .object(let buffer): return .object(buffer.finish())
    case .array(let buffer): return .array(buffer.finish())
    }
  }
}

/// A member or element whose value is still being written when it is recorded: a nested
/// container, or a super encoder. Finished when the buffer holding it is.
package enum PendingValue {
  case object(ObjectBuffer)
  case array(ArrayBuffer)
  /// What a super encoder ends up encoding; an empty object if nothing, as in Foundation.
  case encoder(JSONValueEncoderImpl)

  package func finish() -> JSONValue {
    switch self {
    case .object(let buffer): return .object(buffer.finish())
    case .array(let buffer): return .array(buffer.finish())
    case .encoder(let encoder): return encoder.storage?.finish() ?? .object(JSONObject())
    }
  }
}

/// The members of an object being encoded: unique keys, in the order first set, values
/// already finished except for the few pending ones.
///
/// Its properties skip run-time exclusivity checks (they were a seventh of the encoding
/// time): a buffer belongs to one encode call on one thread, and no access to them is held
/// across a call out to other code.
package final class ObjectBuffer {
  @exclusivity(unchecked) private var members: [JSONObject.Member] = []
  /// Key positions, kept once the object is too big for a linear scan (as `JSONObject` does).
  @exclusivity(unchecked) private var index: [ExactKey: Int]?
  /// Positions whose value is written later; usually empty.
  @exclusivity(unchecked) private var pending: [(position: Int, value: PendingValue)] = []

  package init() {
    // Most objects have 5 to 20 members: one allocation instead of regrowing 1-2-4-8-16.
    members.reserveCapacity(16)
  }

  /// Rules out, for most new keys, that the object has them already.
  @exclusivity(unchecked) private var keyFilter = JSONKeyFilter()

  private func position(of key: String, bit: UInt64) -> Int? {
    if let index { return index[ExactKey(key)] }
    if !keyFilter.mayContain(bit: bit) { return nil }
    for position in members.indices where members[position].key.hasSameBytes(as: key) { return position }
    return nil
  }

  private func position(of key: String) -> Int? {
    position(of: key, bit: JSONKeyFilter.bit(of: key))
  }

  private func append(_ key: String, _ value: JSONValue, bit: UInt64) {
    keyFilter.insert(bit: bit)
    members.append(JSONObject.Member(key: key, value: value))
    if index != nil {
      index![ExactKey(key)] = members.count - 1
    } else if members.count > JSONObject.indexThreshold {
      index = JSONObject.keyIndex(of: members, room: members.count * 2)
    }
  }

  /// Sets the member for `key`, replacing an earlier value where it stands.
  package func set(_ key: String, _ value: JSONValue) {
    let bit = JSONKeyFilter.bit(of: key)
    if let position = position(of: key, bit: bit) {
      members[position].value = value
      if !pending.isEmpty { pending.removeAll { $0.position == position } }
    } else {
      append(key, value, bit: bit)
    }
  }

  /// Sets the member for `key` to a value that is finished later.
  package func setPending(_ key: String, _ value: PendingValue) {
    let bit = JSONKeyFilter.bit(of: key)
    if let position = position(of: key, bit: bit) {
      members[position].value = .null
      pending.removeAll { $0.position == position }
      pending.append((position, value))
    } else {
      append(key, .null, bit: bit)
      pending.append((members.count - 1, value))
    }
  }

  /// The pending value for `key`, if its member is one.
  package func pendingValue(forKey key: String) -> PendingValue? {
    guard !pending.isEmpty, let position = position(of: key) else { return nil }
    return pending.last { $0.position == position }?.value
  }

  /// The finished object. The buffer hands its members over and is empty afterwards.
  package func finish() -> JSONObject {
    for (position, value) in pending { members[position].value = value.finish() }
    pending = []
    let finished = JSONObject(uniqueMembers: members, index: index)
    members = []
    index = nil
    keyFilter = JSONKeyFilter()
    return finished
  }

  /// Sorts the members in ``dictionaryOrder(of:)``: numerically when every key is an integer
  /// (equal numbers by key), otherwise by key.
  package func sortMembersByKey() {
    guard members.count > 1 else { return }
    let order = ObjectBuffer.dictionaryOrder(of: members.lazy.map(\.key))
    var newPosition = [Int](repeating: 0, count: members.count)
    for (new, old) in order.enumerated() { newPosition[old] = new }
    members = order.map { members[$0] }
    pending = pending.map { (newPosition[$0.position], $0.value) }
    if index != nil {
      for (position, member) in members.enumerated() { index![ExactKey(member.key)] = position }
    }
  }
}

extension ObjectBuffer {
  /// The order in which a dictionary's members are written, as positions in `keys`:
  /// numerically when every key is an integer (equal numbers by key), otherwise by key. Both
  /// encoders sort through here.
  package static func dictionaryOrder<Keys: RandomAccessCollection<String>>(of keys: Keys) -> [Int] where Keys.Index == Int {
    withDictionaryOrder(of: keys) { Array($0) }
  }

  /// Calls `body` with ``dictionaryOrder(of:)`` in a temporary buffer instead of an array.
  package static func withDictionaryOrder<Keys: RandomAccessCollection<String>, Result>(
    of keys: Keys, _ body: (UnsafeBufferPointer<Int>) throws -> Result
  ) rethrows -> Result where Keys.Index == Int {
    try withUnsafeTemporaryAllocation(of: Int.self, capacity: keys.count) { buffer in
      var order = buffer  // the same memory; `sort` is a mutating method of the pointer
      for index in order.indices { order.initializeElement(at: index, to: index) }
      if let numbers = integers(keys) {
        // Ties (`1`, `01`, `+1`) by key: the dictionary's own order changes from run to run.
        order.sort { numbers[$0] != numbers[$1] ? numbers[$0] < numbers[$1] : keys[$0] < keys[$1] }
      } else {
        order.sort { keys[$0] < keys[$1] }
      }
      return try body(UnsafeBufferPointer(order))
    }
  }

  /// The keys as integers, or `nil` when one of them is not an integer. Keys whose first
  /// byte cannot start one (`Int(_:)` takes a sign, then digits) are ruled out before any
  /// key is parsed or any array made.
  private static func integers<Keys: RandomAccessCollection<String>>(_ keys: Keys) -> [Int]? {
    let mayAllBeIntegers = keys.allSatisfy { key in
      guard let first = key.utf8.first else { return false }
      return first == UInt8(ascii: "-") || first == UInt8(ascii: "+") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first)
    }
    guard mayAllBeIntegers else { return nil }
    var numbers: [Int] = []
    for key in keys {
      guard let number = Int(key) else { return nil }
      numbers.append(number)
    }
    return numbers
  }
}

/// The elements of an array being encoded. Unchecked exclusivity as in ``ObjectBuffer``.
package final class ArrayBuffer {
  @exclusivity(unchecked) private var elements: [JSONValue] = []
  @exclusivity(unchecked) private var pending: [(position: Int, value: PendingValue)] = []

  package var count: Int { elements.count }

  package func append(_ value: JSONValue) { elements.append(value) }

  package func appendPending(_ value: PendingValue) {
    pending.append((elements.count, value))
    elements.append(.null)
  }

  /// The finished elements. The buffer hands them over and is empty afterwards.
  package func finish() -> [JSONValue] {
    for (position, value) in pending { elements[position] = value.finish() }
    pending = []
    let finished = elements
    elements = []
    return finished
  }
}

package struct JSONKeyedEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
  package let encoder: JSONValueEncoderImpl
  package let buffer: ObjectBuffer
  package let pathNode: CodingPathNode

  package var codingPath: [any CodingKey] { pathNode.path }

  package mutating func encodeNil(forKey key: Key) { buffer.set(key.stringValue, .null) }
  package mutating func encode(_ value: Bool, forKey key: Key) { buffer.set(key.stringValue, .bool(value)) }
  package mutating func encode(_ value: String, forKey key: Key) { buffer.set(key.stringValue, .string(value)) }
  package mutating func encode(_ value: Double, forKey key: Key) throws {
    buffer.set(key.stringValue, try encoder.box(value, parent: pathNode, step: .key(key)))
  }
  package mutating func encode(_ value: Float, forKey key: Key) throws {
    buffer.set(key.stringValue, try encoder.box(value, parent: pathNode, step: .key(key)))
  }
  package mutating func encode(_ value: Int, forKey key: Key) { buffer.set(key.stringValue, .number(JSONNumber(integer: Int64(value)))) }
  package mutating func encode(_ value: Int8, forKey key: Key) { buffer.set(key.stringValue, .number(JSONNumber(integer: Int64(value)))) }
  package mutating func encode(_ value: Int16, forKey key: Key) { buffer.set(key.stringValue, .number(JSONNumber(integer: Int64(value)))) }
  package mutating func encode(_ value: Int32, forKey key: Key) { buffer.set(key.stringValue, .number(JSONNumber(integer: Int64(value)))) }
  package mutating func encode(_ value: Int64, forKey key: Key) { buffer.set(key.stringValue, .number(JSONNumber(integer: Int64(value)))) }
  package mutating func encode(_ value: Int128, forKey key: Key) { setInteger(value, key) }
  package mutating func encode(_ value: UInt, forKey key: Key) { buffer.set(key.stringValue, .number(JSONNumber(integer: UInt64(value)))) }
  package mutating func encode(_ value: UInt8, forKey key: Key) { buffer.set(key.stringValue, .number(JSONNumber(integer: UInt64(value)))) }
  package mutating func encode(_ value: UInt16, forKey key: Key) { buffer.set(key.stringValue, .number(JSONNumber(integer: UInt64(value)))) }
  package mutating func encode(_ value: UInt32, forKey key: Key) { buffer.set(key.stringValue, .number(JSONNumber(integer: UInt64(value)))) }
  package mutating func encode(_ value: UInt64, forKey key: Key) { buffer.set(key.stringValue, .number(JSONNumber(integer: UInt64(value)))) }
  package mutating func encode(_ value: UInt128, forKey key: Key) { setInteger(value, key) }

  package mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
    buffer.set(key.stringValue, try encoder.wrap(value, parent: pathNode, step: .key(key)))
  }

  private func setInteger<Integer: BinaryInteger>(_ value: Integer, _ key: Key) {
    buffer.set(key.stringValue, .number(JSONNumber(value)))
  }

  package mutating func nestedContainer<NestedKey: CodingKey>(
    keyedBy keyType: NestedKey.Type, forKey key: Key
  ) -> KeyedEncodingContainer<NestedKey> {
    let nested: ObjectBuffer
    if case .object(let existing)? = buffer.pendingValue(forKey: key.stringValue) {
      nested = existing
    } else {
      nested = ObjectBuffer()
      buffer.setPending(key.stringValue, .object(nested))
    }
    return KeyedEncodingContainer(
      JSONKeyedEncodingContainer<NestedKey>(encoder: encoder, buffer: nested, pathNode: pathNode.appending(key)))
  }

  package mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
    let nested: ArrayBuffer
    if case .array(let existing)? = buffer.pendingValue(forKey: key.stringValue) {
      nested = existing
    } else {
      nested = ArrayBuffer()
      buffer.setPending(key.stringValue, .array(nested))
    }
    return JSONUnkeyedEncodingContainer(encoder: encoder, buffer: nested, pathNode: pathNode.appending(key))
  }

  package mutating func superEncoder() -> any Encoder { superEncoder(key: JSONCodingKey.superKey) }
  package mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(key: key) }

  private func superEncoder(key: any CodingKey) -> any Encoder {
    let superEncoder = JSONValueEncoderImpl(state: encoder.state, pathNode: pathNode.appending(key))
    buffer.setPending(key.stringValue, .encoder(superEncoder))
    return superEncoder
  }
}

package struct JSONUnkeyedEncodingContainer: UnkeyedEncodingContainer {
  package let encoder: JSONValueEncoderImpl
  package let buffer: ArrayBuffer
  package let pathNode: CodingPathNode

  package var codingPath: [any CodingKey] { pathNode.path }
  package var count: Int { buffer.count }

  package mutating func encodeNil() { buffer.append(.null) }
  package mutating func encode(_ value: Bool) { buffer.append(.bool(value)) }
  package mutating func encode(_ value: String) { buffer.append(.string(value)) }
  package mutating func encode(_ value: Double) throws {
    buffer.append(try encoder.box(value, parent: pathNode, step: .index(count)))
  }
  package mutating func encode(_ value: Float) throws {
    buffer.append(try encoder.box(value, parent: pathNode, step: .index(count)))
  }
  package mutating func encode(_ value: Int) { buffer.append(.number(JSONNumber(integer: Int64(value)))) }
  package mutating func encode(_ value: Int8) { buffer.append(.number(JSONNumber(integer: Int64(value)))) }
  package mutating func encode(_ value: Int16) { buffer.append(.number(JSONNumber(integer: Int64(value)))) }
  package mutating func encode(_ value: Int32) { buffer.append(.number(JSONNumber(integer: Int64(value)))) }
  package mutating func encode(_ value: Int64) { buffer.append(.number(JSONNumber(integer: Int64(value)))) }
  package mutating func encode(_ value: Int128) { appendInteger(value) }
  package mutating func encode(_ value: UInt) { buffer.append(.number(JSONNumber(integer: UInt64(value)))) }
  package mutating func encode(_ value: UInt8) { buffer.append(.number(JSONNumber(integer: UInt64(value)))) }
  package mutating func encode(_ value: UInt16) { buffer.append(.number(JSONNumber(integer: UInt64(value)))) }
  package mutating func encode(_ value: UInt32) { buffer.append(.number(JSONNumber(integer: UInt64(value)))) }
  package mutating func encode(_ value: UInt64) { buffer.append(.number(JSONNumber(integer: UInt64(value)))) }
  package mutating func encode(_ value: UInt128) { appendInteger(value) }

  package mutating func encode<T: Encodable>(_ value: T) throws {
    buffer.append(try encoder.wrap(value, parent: pathNode, step: .index(count)))
  }

  private func appendInteger<Integer: BinaryInteger>(_ value: Integer) {
    buffer.append(.number(JSONNumber(value)))
  }

  package mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
    -> KeyedEncodingContainer<NestedKey>
  {
    let nested = ObjectBuffer()
    let node = pathNode.appending(.index(count))
    buffer.appendPending(.object(nested))
    return KeyedEncodingContainer(
      JSONKeyedEncodingContainer<NestedKey>(encoder: encoder, buffer: nested, pathNode: node))
  }

  package mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
    let nested = ArrayBuffer()
    let node = pathNode.appending(.index(count))
    buffer.appendPending(.array(nested))
    return JSONUnkeyedEncodingContainer(encoder: encoder, buffer: nested, pathNode: node)
  }

  package mutating func superEncoder() -> any Encoder {
    let superEncoder = JSONValueEncoderImpl(state: encoder.state, pathNode: pathNode.appending(.index(count)))
    buffer.appendPending(.encoder(superEncoder))
    return superEncoder
  }
}
