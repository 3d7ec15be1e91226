import CCSyncSystem

/// Reads the members of one JSON object. Keeps the `JSONObject` it was given (a reference to
/// its storage, not a copy) and looks keys up through the decoder's in-order hint
/// (``JSONValueDecoderImpl/position(of:in:)``). A key the object lacks is looked up in
/// ``fallback``, when there is one (see ``JSONValueDecoder/decode(_:from:missingMembersFrom:)``);
/// ``allKeys`` never lists the fallback's keys.
///
/// A class, not a struct: the standard library's type-erasing box calls every method through
/// unspecialized code that copies the container for each call, and copying one reference is
/// one retain where a struct of four references cost four, plus a value-witness call.
package final class JSONKeyedDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
  package let decoder: JSONValueDecoderImpl
  package let object: JSONObject
  /// The node of the object's parent; the object is ``step`` below it.
  package let parentNode: CodingPathNode
  package let step: CodingPathStep
  /// Where members the object lacks come from; `nil` in the usual decode.
  package let fallback: JSONObject?
  /// The object's own node, once something needed it.
  // Unchecked exclusivity: read and set in one place, never across a call out.
  @exclusivity(unchecked) private var madeNode: CodingPathNode?

  package init(
    decoder: JSONValueDecoderImpl, object: JSONObject, parentNode: CodingPathNode, step: CodingPathStep,
    fallback: JSONObject? = nil
  ) {
    self.decoder = decoder
    self.object = object
    self.parentNode = parentNode
    self.step = step
    self.fallback = fallback
  }

  /// The object's path node, made the first time it is needed: for an error, for a member
  /// with a path of its own (a struct, an array), or for `codingPath`. An object of leaves
  /// never needs it. The container keeps its own parent and step, so the answer stays right
  /// when the container is used after the decoder has moved on.
  package var pathNode: CodingPathNode {
    if let madeNode { return madeNode }
    let node = parentNode.appending(step)
    madeNode = node
    return node
  }

  package var codingPath: [any CodingKey] { pathNode.path }

  /// The object's own keys: never the fallback's, so a dictionary gets exactly the entries
  /// the document has.
  package var allKeys: [Key] { object.members.compactMap { Key(stringValue: $0.key) } }

  package func contains(_ key: Key) -> Bool {
    object.position(of: key.stringValue) != nil || fallback?[key.stringValue] != nil
  }

  private func member(_ key: Key) throws -> JSONValue {
    if let position = decoder.position(of: key.stringValue, in: object) { return object.members[position].value }
    if let fallback, let value = fallback[key.stringValue] { return value }
    throw DecodingError.keyNotFound(
      key, DecodingError.Context(codingPath: codingPath, debugDescription: "missing key '\(key.stringValue)'"))
  }

  /// The fallback of the member for `key`: the fallback's member of that name, if an object.
  @inline(__always)
  private func memberFallback(_ key: Key) -> JSONObject? {
    guard let fallback else { return nil }
    return fallback[key.stringValue]?.objectValue
  }

  /// The member for `key` (the fallback's when the object lacks it) unless it is missing or
  /// `null`.
  private func presentMember(_ key: Key) -> JSONValue? {
    guard let position = decoder.position(of: key.stringValue, in: object) else {
      guard let fallback, let value = fallback[key.stringValue], !value.isNull else { return nil }
      return value
    }
    let value = object.members[position].value
    // Not `value.isNull ? nil : value`: JSONValue is ExpressibleByNilLiteral, so that `nil`
    // would be `.null` and come back as a present member.
    if value.isNull { return nil }
    return value
  }

  package func decodeNil(forKey key: Key) throws -> Bool { try member(key).isNull }

  package func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
    try decoder.unboxBool(member(key), parent: pathNode, step: .key(key))
  }
  package func decode(_ type: String.Type, forKey key: Key) throws -> String {
    try decoder.unboxString(member(key), parent: pathNode, step: .key(key))
  }
  package func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
    try decoder.unboxDouble(member(key), parent: pathNode, step: .key(key))
  }
  package func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
    try decoder.unboxFloat(member(key), parent: pathNode, step: .key(key))
  }
  package func decode(_ type: Int.Type, forKey key: Key) throws -> Int {
    try decoder.unboxInt(member(key), parent: pathNode, step: .key(key))
  }
  package func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(key) }
  package func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(key) }
  package func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(key) }
  package func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(key) }
  package func decode(_ type: Int128.Type, forKey key: Key) throws -> Int128 { try integer(key) }
  package func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(key) }
  package func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(key) }
  package func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(key) }
  package func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(key) }
  package func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(key) }
  package func decode(_ type: UInt128.Type, forKey key: Key) throws -> UInt128 { try integer(key) }
  package func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
    try decoder.unwrap(member(key), as: type, parent: pathNode, step: .key(key), fallback: memberFallback(key))
  }

  @inline(__always)
  private func integer<Integer: FixedWidthInteger>(_ key: Key) throws -> Integer {
    try decoder.unboxInteger(member(key), as: Integer.self, parent: pathNode, step: .key(key))
  }

  // One lookup each, where the standard library's defaults would look the key up three times.
  package func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
    guard let value = presentMember(key) else { return nil }
    return try decoder.unboxBool(value, parent: pathNode, step: .key(key))
  }
  package func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
    guard let value = presentMember(key) else { return nil }
    return try decoder.unboxString(value, parent: pathNode, step: .key(key))
  }
  package func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
    guard let value = presentMember(key) else { return nil }
    return try decoder.unboxDouble(value, parent: pathNode, step: .key(key))
  }
  package func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? {
    guard let value = presentMember(key) else { return nil }
    return try decoder.unboxFloat(value, parent: pathNode, step: .key(key))
  }
  package func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
    guard let value = presentMember(key) else { return nil }
    return try decoder.unboxInt(value, parent: pathNode, step: .key(key))
  }
  package func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try integerIfPresent(key) }
  package func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try integerIfPresent(key) }
  package func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try integerIfPresent(key) }
  package func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try integerIfPresent(key) }
  package func decodeIfPresent(_ type: Int128.Type, forKey key: Key) throws -> Int128? { try integerIfPresent(key) }
  package func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try integerIfPresent(key) }
  package func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try integerIfPresent(key) }
  package func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try integerIfPresent(key) }
  package func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try integerIfPresent(key) }
  package func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try integerIfPresent(key) }
  package func decodeIfPresent(_ type: UInt128.Type, forKey key: Key) throws -> UInt128? { try integerIfPresent(key) }
  package func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
    guard let value = presentMember(key) else { return nil }
    return try decoder.unwrap(value, as: type, parent: pathNode, step: .key(key), fallback: memberFallback(key))
  }

  @inline(__always)
  private func integerIfPresent<Integer: FixedWidthInteger>(_ key: Key) throws -> Integer? {
    guard let value = presentMember(key) else { return nil }
    return try decoder.unboxInteger(value, as: Integer.self, parent: pathNode, step: .key(key))
  }

  package func nestedContainer<NestedKey: CodingKey>(
    keyedBy type: NestedKey.Type, forKey key: Key
  ) throws -> KeyedDecodingContainer<NestedKey> {
    let value = try member(key)
    guard case .object(let nested) = value else {
      throw decoder.mismatch([String: Any].self, value, parent: pathNode, step: .key(key), expected: "an object")
    }
    return KeyedDecodingContainer(
      JSONKeyedDecodingContainer<NestedKey>(
        decoder: decoder, object: nested, parentNode: pathNode, step: .key(key), fallback: memberFallback(key)))
  }

  package func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
    let value = try member(key)
    guard case .array(let elements) = value else {
      throw decoder.mismatch([Any].self, value, parent: pathNode, step: .key(key), expected: "an array")
    }
    return JSONUnkeyedDecodingContainer(decoder: decoder, elements: elements, pathNode: pathNode.appending(key))
  }

  /// A decoder for the `super` member; `null` when there is none, as in Foundation.
  package func superDecoder() throws -> any Decoder {
    superDecoder(named: JSONCodingKey.superKey)
  }

  package func superDecoder(forKey key: Key) throws -> any Decoder {
    superDecoder(named: key)
  }

  private func superDecoder(named key: some CodingKey) -> any Decoder {
    let name = key.stringValue
    let value = object[name] ?? fallback?[name] ?? .null
    return decoder.makeSuperDecoder(value, parent: pathNode, step: .key(key), fallback: fallback?[name]?.objectValue)
  }
}

/// Reads the elements of one JSON array in order.
package struct JSONUnkeyedDecodingContainer: UnkeyedDecodingContainer {
  package let decoder: JSONValueDecoderImpl
  package let elements: [JSONValue]
  package let pathNode: CodingPathNode
  package private(set) var currentIndex = 0

  package init(decoder: JSONValueDecoderImpl, elements: [JSONValue], pathNode: CodingPathNode) {
    self.decoder = decoder
    self.elements = elements
    self.pathNode = pathNode
  }

  package var codingPath: [any CodingKey] { pathNode.path }
  package var count: Int? { elements.count }
  package var isAtEnd: Bool { currentIndex >= elements.count }

  /// The current element; throws `valueNotFound` at the end of the array.
  private func current(_ type: Any.Type) throws -> JSONValue {
    guard currentIndex < elements.count else {
      throw DecodingError.valueNotFound(
        type,
        DecodingError.Context(
          codingPath: pathNode.path(appending: .index(currentIndex)),
          debugDescription: "expected \(type), found the end of an array of \(elements.count) elements"))
    }
    return elements[currentIndex]
  }

  package mutating func decodeNil() throws -> Bool {
    guard try current(Any?.self).isNull else { return false }
    currentIndex += 1
    return true
  }

  package mutating func decode(_ type: Bool.Type) throws -> Bool {
    let result = try decoder.unboxBool(current(type), parent: pathNode, step: .index(currentIndex))
    currentIndex += 1
    return result
  }
  package mutating func decode(_ type: String.Type) throws -> String {
    let result = try decoder.unboxString(current(type), parent: pathNode, step: .index(currentIndex))
    currentIndex += 1
    return result
  }
  package mutating func decode(_ type: Double.Type) throws -> Double {
    let result = try decoder.unboxDouble(current(type), parent: pathNode, step: .index(currentIndex))
    currentIndex += 1
    return result
  }
  package mutating func decode(_ type: Float.Type) throws -> Float {
    let result = try decoder.unboxFloat(current(type), parent: pathNode, step: .index(currentIndex))
    currentIndex += 1
    return result
  }
  package mutating func decode(_ type: Int.Type) throws -> Int {
    let result = try decoder.unboxInt(current(type), parent: pathNode, step: .index(currentIndex))
    currentIndex += 1
    return result
  }
  package mutating func decode(_ type: Int8.Type) throws -> Int8 { try integer() }
  package mutating func decode(_ type: Int16.Type) throws -> Int16 { try integer() }
  package mutating func decode(_ type: Int32.Type) throws -> Int32 { try integer() }
  package mutating func decode(_ type: Int64.Type) throws -> Int64 { try integer() }
  package mutating func decode(_ type: Int128.Type) throws -> Int128 { try integer() }
  package mutating func decode(_ type: UInt.Type) throws -> UInt { try integer() }
  package mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try integer() }
  package mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try integer() }
  package mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try integer() }
  package mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try integer() }
  package mutating func decode(_ type: UInt128.Type) throws -> UInt128 { try integer() }
  package mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
    let result = try decoder.unwrap(current(type), as: type, parent: pathNode, step: .index(currentIndex))
    currentIndex += 1
    return result
  }

  @inline(__always)
  private mutating func integer<Integer: FixedWidthInteger>() throws -> Integer {
    let result = try decoder.unboxInteger(
      current(Integer.self), as: Integer.self, parent: pathNode, step: .index(currentIndex))
    currentIndex += 1
    return result
  }

  package mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
    -> KeyedDecodingContainer<NestedKey>
  {
    let value = try current([String: Any].self)
    guard case .object(let nested) = value else {
      throw decoder.mismatch(
        [String: Any].self, value, parent: pathNode, step: .index(currentIndex), expected: "an object")
    }
    let step = CodingPathStep.index(currentIndex)
    currentIndex += 1
    return KeyedDecodingContainer(
      JSONKeyedDecodingContainer<NestedKey>(decoder: decoder, object: nested, parentNode: pathNode, step: step))
  }

  package mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
    let value = try current([Any].self)
    guard case .array(let nested) = value else {
      throw decoder.mismatch([Any].self, value, parent: pathNode, step: .index(currentIndex), expected: "an array")
    }
    let node = pathNode.appending(.index(currentIndex))
    currentIndex += 1
    return JSONUnkeyedDecodingContainer(decoder: decoder, elements: nested, pathNode: node)
  }

  package mutating func superDecoder() throws -> any Decoder {
    let value = try current((any Decoder).self)
    let superDecoder = decoder.makeSuperDecoder(value, parent: pathNode, step: .index(currentIndex))
    currentIndex += 1
    return superDecoder
  }
}
