// The encoding floor: an `Encoder` that takes every value and keeps nothing but a checksum.
// What it costs is what any Codable encoder must cost for the same type.

/// Accepts every `encode` call and throws the value away, folding it into ``checksum`` so
/// the work that produced it cannot be optimised out, and counting it in ``valueCount`` (a
/// check that every value was seen). Keys are not read, nothing is built, no coding path is
/// kept, nothing can throw.
///
/// What remains is the work the Codable protocol itself forces on any encoder: the
/// synthesized `encode(to:)` of every type, a `KeyedEncodingContainer` per object (one per
/// key type, kept in a ``KeyedContainerCache``: the generic metadata of
/// `KeyedEncodingContainer<Key>` is still looked up each time), one call per field through
/// the standard library box's unspecialized code, the `Encoder` existential passed to each
/// `encode(to:)`.
///
/// It takes the same shortcuts as `JSONValueEncoder`, which any encoder may: a generic
/// `encode` of `String`, `Int`, `Double`, `Bool`, `[String]`, `[Int]` or `[String: String]`
/// is taken whole (each element still folded in); arrays of other values go through the
/// standard library's `Array.encode(to:)` and an unkeyed container.
final class DiscardEncoder: Encoder, SingleValueEncodingContainer {
  // Unchecked exclusivity: an encode runs on one thread, and no access is held across a call.
  @exclusivity(unchecked) private(set) var checksum: UInt64 = 0
  /// Leaf values taken: strings, numbers, Booleans, nulls (not dictionary keys).
  @exclusivity(unchecked) private(set) var valueCount = 0
  /// One keyed container per key type: ours keep no state, so one serves every object.
  @exclusivity(unchecked) private var keyedContainers = KeyedContainerCache()

  /// Encodes `value` into nothing and returns the checksum and count of what it encoded.
  static func encode<T: Encodable>(_ value: T) throws -> (checksum: UInt64, valueCount: Int) {
    let encoder = DiscardEncoder()
    defer { encoder.keyedContainers.removeAll() }
    try encoder.value(value)
    return (encoder.checksum, encoder.valueCount)
  }

  var codingPath: [any CodingKey] { [] }
  var userInfo: [CodingUserInfoKey: Any] { [:] }

  func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
    keyedContainers.container { KeyedEncodingContainer(DiscardKeyedContainer<Key>(encoder: self)) }
  }

  func unkeyedContainer() -> any UnkeyedEncodingContainer { DiscardUnkeyedContainer(encoder: self) }

  func singleValueContainer() -> any SingleValueEncodingContainer { self }

  /// Folds one value's bits into the checksum.
  @inline(__always) func absorb(bits: UInt64) {
    checksum = (checksum &<< 5 | checksum &>> 59) ^ bits
    valueCount &+= 1
  }
  @inline(__always) func absorb(_ string: String) { absorb(bits: UInt64(truncatingIfNeeded: string.utf8.count)) }
  @inline(__always) func absorb(_ bool: Bool) { absorb(bits: bool ? 1 : 2) }
  @inline(__always) func absorb(_ double: Double) { absorb(bits: double.bitPattern) }
  @inline(__always) func absorb<Integer: FixedWidthInteger>(integer: Integer) {
    absorb(bits: UInt64(truncatingIfNeeded: integer))
  }

  /// Takes one value of a generic `encode`: the common leaf types and collections of them
  /// directly (`unsafeBitCast` after the identity test: `T` is that type, so no dynamic cast
  /// runs), everything else through its `encode(to:)`.
  func value<T: Encodable>(_ value: T) throws {
    if T.self == String.self { return absorb(unsafeBitCast(value, to: String.self)) }
    if T.self == Int.self { return absorb(integer: unsafeBitCast(value, to: Int.self)) }
    if T.self == Double.self { return absorb(unsafeBitCast(value, to: Double.self)) }
    if T.self == Bool.self { return absorb(unsafeBitCast(value, to: Bool.self)) }
    if T.self == [String].self {
      for string in unsafeBitCast(value, to: [String].self) { absorb(string) }
      return
    }
    if T.self == [Int].self {
      for integer in unsafeBitCast(value, to: [Int].self) { absorb(integer: integer) }
      return
    }
    if T.self == [String: String].self {
      for (key, string) in unsafeBitCast(value, to: [String: String].self) {
        absorb(string)
        checksum ^= UInt64(truncatingIfNeeded: key.utf8.count)
      }
      return
    }
    try value.encode(to: self)
  }

  // MARK: Single-value container

  func encodeNil() { absorb(bits: 0) }
  func encode(_ value: Bool) { absorb(value) }
  func encode(_ value: String) { absorb(value) }
  func encode(_ value: Double) { absorb(value) }
  func encode(_ value: Float) { absorb(Double(value)) }
  func encode(_ value: Int) { absorb(integer: value) }
  func encode(_ value: Int8) { absorb(integer: value) }
  func encode(_ value: Int16) { absorb(integer: value) }
  func encode(_ value: Int32) { absorb(integer: value) }
  func encode(_ value: Int64) { absorb(integer: value) }
  func encode(_ value: Int128) { absorb(integer: value) }
  func encode(_ value: UInt) { absorb(integer: value) }
  func encode(_ value: UInt8) { absorb(integer: value) }
  func encode(_ value: UInt16) { absorb(integer: value) }
  func encode(_ value: UInt32) { absorb(integer: value) }
  func encode(_ value: UInt64) { absorb(integer: value) }
  func encode(_ value: UInt128) { absorb(integer: value) }
  func encode<T: Encodable>(_ value: T) throws { try self.value(value) }
}

/// The keyed container of ``DiscardEncoder``: ignores the key, folds the value in. A struct
/// of one reference, so the box's copies cost one retain.
struct DiscardKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
  let encoder: DiscardEncoder

  var codingPath: [any CodingKey] { [] }

  mutating func encodeNil(forKey key: Key) { encoder.absorb(bits: 0) }
  mutating func encode(_ value: Bool, forKey key: Key) { encoder.absorb(value) }
  mutating func encode(_ value: String, forKey key: Key) { encoder.absorb(value) }
  mutating func encode(_ value: Double, forKey key: Key) { encoder.absorb(value) }
  mutating func encode(_ value: Float, forKey key: Key) { encoder.absorb(Double(value)) }
  mutating func encode(_ value: Int, forKey key: Key) { encoder.absorb(integer: value) }
  mutating func encode(_ value: Int8, forKey key: Key) { encoder.absorb(integer: value) }
  mutating func encode(_ value: Int16, forKey key: Key) { encoder.absorb(integer: value) }
  mutating func encode(_ value: Int32, forKey key: Key) { encoder.absorb(integer: value) }
  mutating func encode(_ value: Int64, forKey key: Key) { encoder.absorb(integer: value) }
  mutating func encode(_ value: Int128, forKey key: Key) { encoder.absorb(integer: value) }
  mutating func encode(_ value: UInt, forKey key: Key) { encoder.absorb(integer: value) }
  mutating func encode(_ value: UInt8, forKey key: Key) { encoder.absorb(integer: value) }
  mutating func encode(_ value: UInt16, forKey key: Key) { encoder.absorb(integer: value) }
  mutating func encode(_ value: UInt32, forKey key: Key) { encoder.absorb(integer: value) }
  mutating func encode(_ value: UInt64, forKey key: Key) { encoder.absorb(integer: value) }
  mutating func encode(_ value: UInt128, forKey key: Key) { encoder.absorb(integer: value) }
  mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try encoder.value(value) }

  mutating func nestedContainer<NestedKey: CodingKey>(
    keyedBy keyType: NestedKey.Type, forKey key: Key
  ) -> KeyedEncodingContainer<NestedKey> {
    KeyedEncodingContainer(DiscardKeyedContainer<NestedKey>(encoder: encoder))
  }

  mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
    DiscardUnkeyedContainer(encoder: encoder)
  }

  mutating func superEncoder() -> any Encoder { encoder }
  mutating func superEncoder(forKey key: Key) -> any Encoder { encoder }
}

/// The unkeyed container of ``DiscardEncoder``: counts the elements (the protocol asks for
/// `count`) and folds each one in.
struct DiscardUnkeyedContainer: UnkeyedEncodingContainer {
  let encoder: DiscardEncoder
  private(set) var count = 0

  init(encoder: DiscardEncoder) { self.encoder = encoder }

  var codingPath: [any CodingKey] { [] }

  mutating func encodeNil() { count &+= 1; encoder.absorb(bits: 0) }
  mutating func encode(_ value: Bool) { count &+= 1; encoder.absorb(value) }
  mutating func encode(_ value: String) { count &+= 1; encoder.absorb(value) }
  mutating func encode(_ value: Double) { count &+= 1; encoder.absorb(value) }
  mutating func encode(_ value: Float) { count &+= 1; encoder.absorb(Double(value)) }
  mutating func encode(_ value: Int) { count &+= 1; encoder.absorb(integer: value) }
  mutating func encode(_ value: Int8) { count &+= 1; encoder.absorb(integer: value) }
  mutating func encode(_ value: Int16) { count &+= 1; encoder.absorb(integer: value) }
  mutating func encode(_ value: Int32) { count &+= 1; encoder.absorb(integer: value) }
  mutating func encode(_ value: Int64) { count &+= 1; encoder.absorb(integer: value) }
  mutating func encode(_ value: Int128) { count &+= 1; encoder.absorb(integer: value) }
  mutating func encode(_ value: UInt) { count &+= 1; encoder.absorb(integer: value) }
  mutating func encode(_ value: UInt8) { count &+= 1; encoder.absorb(integer: value) }
  mutating func encode(_ value: UInt16) { count &+= 1; encoder.absorb(integer: value) }
  mutating func encode(_ value: UInt32) { count &+= 1; encoder.absorb(integer: value) }
  mutating func encode(_ value: UInt64) { count &+= 1; encoder.absorb(integer: value) }
  mutating func encode(_ value: UInt128) { count &+= 1; encoder.absorb(integer: value) }
  mutating func encode<T: Encodable>(_ value: T) throws {
    count &+= 1
    try encoder.value(value)
  }

  mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
    -> KeyedEncodingContainer<NestedKey>
  {
    count &+= 1
    return KeyedEncodingContainer(DiscardKeyedContainer<NestedKey>(encoder: encoder))
  }

  mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
    count &+= 1
    return DiscardUnkeyedContainer(encoder: encoder)
  }

  mutating func superEncoder() -> any Encoder {
    count &+= 1
    return encoder
  }
}
