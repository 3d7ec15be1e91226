import CCSyncSystem
import CCSyncJSON

/// Writes the members of one object of ``JSONTextEncoderImpl``'s output, in the order they are
/// encoded. `position` and `token` name the object's frame; `position` -1 is a container
/// handed out after a misuse, which abandons the single pass at its first use. Its coding
/// path is the encoder's first `pathDepth` steps.
///
/// A struct, unlike ``JSONKeyedDecodingContainer``: the encoding requirements are `mutating`,
/// so the standard library's box calls them on the container where it lies instead of on a
/// copy, and a struct saves an allocation per object.
struct JSONTextKeyedEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
  let encoder: JSONTextEncoderImpl
  let position: Int
  let token: UInt32
  let pathDepth: Int

  init(encoder: JSONTextEncoderImpl, position: Int, token: UInt32, pathDepth: Int) {
    self.encoder = encoder
    self.position = position
    self.token = token
    self.pathDepth = pathDepth
  }

  var codingPath: [any CodingKey] { encoder.containerPath(depth: pathDepth, position: position, token: token) }

  private func begin(_ key: Key) throws {
    try encoder.beginMember(key.stringValue, in: position, token: token)
  }

  func encodeNil(forKey key: Key) throws {
    try begin(key)
    encoder.printer.append("null")
  }
  func encode(_ value: Bool, forKey key: Key) throws {
    try begin(key)
    encoder.printer.append(value ? "true" : "false")
  }
  func encode(_ value: String, forKey key: Key) throws {
    try begin(key)
    encoder.printer.writeString(value)
  }
  func encode(_ value: Double, forKey key: Key) throws {
    try begin(key)
    try encoder.writeDouble(value, parentDepth: pathDepth, step: .key(key))
  }
  func encode(_ value: Float, forKey key: Key) throws {
    try begin(key)
    encoder.writeLeaf(try encoder.tree.box(value, parent: encoder.pathNode(depth: pathDepth), step: .key(key)))
  }
  func encode(_ value: Int, forKey key: Key) throws { try integer(Int64(value), key) }
  func encode(_ value: Int8, forKey key: Key) throws { try integer(Int64(value), key) }
  func encode(_ value: Int16, forKey key: Key) throws { try integer(Int64(value), key) }
  func encode(_ value: Int32, forKey key: Key) throws { try integer(Int64(value), key) }
  func encode(_ value: Int64, forKey key: Key) throws { try integer(value, key) }
  func encode(_ value: Int128, forKey key: Key) throws { try number(JSONNumber(value), key) }
  func encode(_ value: UInt, forKey key: Key) throws { try integer(UInt64(value), key) }
  func encode(_ value: UInt8, forKey key: Key) throws { try integer(UInt64(value), key) }
  func encode(_ value: UInt16, forKey key: Key) throws { try integer(UInt64(value), key) }
  func encode(_ value: UInt32, forKey key: Key) throws { try integer(UInt64(value), key) }
  func encode(_ value: UInt64, forKey key: Key) throws { try integer(value, key) }
  func encode(_ value: UInt128, forKey key: Key) throws { try number(JSONNumber(value), key) }
  func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
    try begin(key)
    try encoder.encodeValue(value, step: .key(key))
  }

  private func integer(_ value: Int64, _ key: Key) throws {
    try begin(key)
    encoder.printer.writeInteger(value)
  }

  private func integer(_ value: UInt64, _ key: Key) throws {
    try begin(key)
    encoder.printer.writeInteger(value)
  }

  private func number(_ number: JSONNumber, _ key: Key) throws {
    try begin(key)
    encoder.printer.appendUTF8(of: number.text)
  }

  func nestedContainer<NestedKey: CodingKey>(
    keyedBy keyType: NestedKey.Type, forKey key: Key
  ) -> KeyedEncodingContainer<NestedKey> {
    let nested = openNested(key, isObject: true)
    return KeyedEncodingContainer(
      JSONTextKeyedEncodingContainer<NestedKey>(
        encoder: encoder, position: nested.position, token: nested.token, pathDepth: nested.pathDepth))
  }

  func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
    let nested = openNested(key, isObject: false)
    return JSONTextUnkeyedEncodingContainer(
      encoder: encoder, position: nested.position, token: nested.token, pathDepth: nested.pathDepth)
  }

  private func openNested(_ key: Key, isObject: Bool) -> JSONTextEncoderImpl.NestedFrame {
    do {
      try begin(key)
    } catch {
      encoder.abandoned = true
      return JSONTextEncoderImpl.NestedFrame(position: -1, token: 0, pathDepth: pathDepth)
    }
    return encoder.pushNestedFrame(isObject: isObject, step: .key(key))
  }

  /// One pass cannot write a super encoder's value where it belongs: the tree does it.
  func superEncoder() -> any Encoder { abandonForSuperEncoder() }
  func superEncoder(forKey key: Key) -> any Encoder { abandonForSuperEncoder() }

  private func abandonForSuperEncoder() -> any Encoder {
    encoder.abandoned = true
    return JSONValueEncoderImpl(state: encoder.tree.state, pathNode: encoder.pathNode(depth: pathDepth))
  }
}

/// Writes the elements of one array of ``JSONTextEncoderImpl``'s output, in order; its
/// frame and path as ``JSONTextKeyedEncodingContainer``'s.
struct JSONTextUnkeyedEncodingContainer: UnkeyedEncodingContainer {
  let encoder: JSONTextEncoderImpl
  private let storedPosition: Int32
  let token: UInt32
  private let storedPathDepth: Int32
  private var storedCount: Int32 = 0

  /// Positions, depths and counts are kept in 32 bits, so the container fits in the three
  /// words an `any UnkeyedEncodingContainer` holds inline: an array costs no allocation.
  init(encoder: JSONTextEncoderImpl, position: Int, token: UInt32, pathDepth: Int) {
    self.encoder = encoder
    self.storedPosition = Int32(truncatingIfNeeded: position)
    self.token = token
    self.storedPathDepth = Int32(truncatingIfNeeded: pathDepth)
  }

  var position: Int { Int(storedPosition) }
  var pathDepth: Int { Int(storedPathDepth) }
  var count: Int { Int(storedCount) }

  var codingPath: [any CodingKey] { encoder.containerPath(depth: pathDepth, position: position, token: token) }

  /// Starts the next element; returns its index.
  private mutating func begin() throws -> Int {
    let index = try encoder.beginElement(in: position, token: token)
    storedCount = Int32(truncatingIfNeeded: index + 1)
    return index
  }

  mutating func encodeNil() throws {
    _ = try begin()
    encoder.printer.append("null")
  }
  mutating func encode(_ value: Bool) throws {
    _ = try begin()
    encoder.printer.append(value ? "true" : "false")
  }
  mutating func encode(_ value: String) throws {
    _ = try begin()
    encoder.printer.writeString(value)
  }
  mutating func encode(_ value: Double) throws {
    let index = try begin()
    try encoder.writeDouble(value, parentDepth: pathDepth, step: .index(index))
  }
  mutating func encode(_ value: Float) throws {
    let index = try begin()
    encoder.writeLeaf(try encoder.tree.box(value, parent: encoder.pathNode(depth: pathDepth), step: .index(index)))
  }
  mutating func encode(_ value: Int) throws { try integer(Int64(value)) }
  mutating func encode(_ value: Int8) throws { try integer(Int64(value)) }
  mutating func encode(_ value: Int16) throws { try integer(Int64(value)) }
  mutating func encode(_ value: Int32) throws { try integer(Int64(value)) }
  mutating func encode(_ value: Int64) throws { try integer(value) }
  mutating func encode(_ value: Int128) throws { try number(JSONNumber(value)) }
  mutating func encode(_ value: UInt) throws { try integer(UInt64(value)) }
  mutating func encode(_ value: UInt8) throws { try integer(UInt64(value)) }
  mutating func encode(_ value: UInt16) throws { try integer(UInt64(value)) }
  mutating func encode(_ value: UInt32) throws { try integer(UInt64(value)) }
  mutating func encode(_ value: UInt64) throws { try integer(value) }
  mutating func encode(_ value: UInt128) throws { try number(JSONNumber(value)) }
  mutating func encode<T: Encodable>(_ value: T) throws {
    let index = try begin()
    try encoder.encodeValue(value, step: .index(index))
  }

  private mutating func integer(_ value: Int64) throws {
    _ = try begin()
    encoder.printer.writeInteger(value)
  }

  private mutating func integer(_ value: UInt64) throws {
    _ = try begin()
    encoder.printer.writeInteger(value)
  }

  private mutating func number(_ number: JSONNumber) throws {
    _ = try begin()
    encoder.printer.appendUTF8(of: number.text)
  }

  mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
    let nested = openNested(isObject: true)
    return KeyedEncodingContainer(
      JSONTextKeyedEncodingContainer<NestedKey>(
        encoder: encoder, position: nested.position, token: nested.token, pathDepth: nested.pathDepth))
  }

  mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
    let nested = openNested(isObject: false)
    return JSONTextUnkeyedEncodingContainer(
      encoder: encoder, position: nested.position, token: nested.token, pathDepth: nested.pathDepth)
  }

  private mutating func openNested(isObject: Bool) -> JSONTextEncoderImpl.NestedFrame {
    let index: Int
    do {
      index = try begin()
    } catch {
      encoder.abandoned = true
      return JSONTextEncoderImpl.NestedFrame(position: -1, token: 0, pathDepth: pathDepth)
    }
    return encoder.pushNestedFrame(isObject: isObject, step: .index(index))
  }

  func superEncoder() -> any Encoder {
    encoder.abandoned = true
    return JSONValueEncoderImpl(state: encoder.tree.state, pathNode: encoder.pathNode(depth: pathDepth))
  }
}
