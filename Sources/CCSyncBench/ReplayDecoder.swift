// The timed pass of the replay floor: a `Decoder` that answers each call with the next
// recorded value. What it costs is what any Codable decoder must cost for the same type.

/// Plays a ``DecodingTape`` back to the same `init(from:)` calls that recorded it: each
/// `decode` returns the next value of its column. No key is looked up, no type is checked
/// beyond choosing the column, no error can be thrown, no coding path is kept.
///
/// What remains is the work the Codable protocol itself forces on any decoder: the
/// synthesized `init(from:)` of every type, a `KeyedDecodingContainer` per object (one per
/// key type, kept in a ``KeyedContainerCache``: the generic metadata of
/// `KeyedDecodingContainer<Key>` is still looked up each time), one call per field through
/// the standard library box's unspecialized code, the `Decoder` existential passed to each
/// `init(from:)`.
///
/// It takes the same shortcuts as `JSONValueDecoder`, which any decoder may: a generic
/// `decode` of `String`, `Int`, `Double`, `Bool`, `[String]` or `[String: String]` is answered
/// whole, and arrays are filled element by element without `Array.init(from:)` (unless
/// ``ArrayPath/standardLibrary`` says otherwise).
///
/// The tape's values are not read twice: a decoder replays one tape once, from the start.
final class ReplayDecoder: Decoder, SingleValueDecodingContainer {
  /// How arrays of decodable values are replayed.
  enum ArrayPath {
    /// Element by element into a reserved array, as `JSONValueDecoder` does.
    case direct
    /// Through the standard library's `Array.init(from:)` and an unkeyed container.
    case standardLibrary
  }

  let tape: DecodingTape
  let arrays: ArrayPath
  // Unchecked exclusivity: a replay runs on one thread, and no access is held across a call.
  @exclusivity(unchecked) var stringCursor = 0
  @exclusivity(unchecked) var integerCursor = 0
  @exclusivity(unchecked) var doubleCursor = 0
  @exclusivity(unchecked) var floatCursor = 0
  @exclusivity(unchecked) var boolCursor = 0
  @exclusivity(unchecked) var flagCursor = 0
  @exclusivity(unchecked) var countCursor = 0
  @exclusivity(unchecked) var kindCursor = 0
  @exclusivity(unchecked) var stringArrayCursor = 0
  @exclusivity(unchecked) var stringDictionaryCursor = 0
  /// One keyed container per key type: ours keep no state, so one serves every object.
  @exclusivity(unchecked) var keyedContainers = KeyedContainerCache()

  init(tape: DecodingTape, arrays: ArrayPath = .direct) {
    self.tape = tape
    self.arrays = arrays
  }

  /// Replays `tape`, recorded from a decode of `type`.
  static func decode<T: Decodable>(_ type: T.Type, from tape: DecodingTape, arrays: ArrayPath = .direct) throws -> T {
    let decoder = ReplayDecoder(tape: tape, arrays: arrays)
    defer { decoder.keyedContainers.removeAll() }
    return try decoder.value(T.self)
  }

  var codingPath: [any CodingKey] { [] }
  var userInfo: [CodingUserInfoKey: Any] { [:] }

  func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedDecodingContainer<Key> {
    keyedContainers.container { KeyedDecodingContainer(ReplayKeyedContainer<Key>(decoder: self)) }
  }

  func unkeyedContainer() -> any UnkeyedDecodingContainer {
    ReplayUnkeyedContainer(decoder: self, elementCount: nextCount())
  }

  func singleValueContainer() -> any SingleValueDecodingContainer { self }

  // MARK: Reading the tape

  @inline(__always) func nextString() -> String {
    defer { stringCursor &+= 1 }
    return tape.strings[stringCursor]
  }
  @inline(__always) func nextInteger<Integer: FixedWidthInteger>(_ type: Integer.Type = Integer.self) -> Integer {
    defer { integerCursor &+= 1 }
    return Integer(truncatingIfNeeded: tape.integers[integerCursor])
  }
  @inline(__always) func nextDouble() -> Double {
    defer { doubleCursor &+= 1 }
    return tape.doubles[doubleCursor]
  }
  @inline(__always) func nextFloat() -> Float {
    defer { floatCursor &+= 1 }
    return tape.floats[floatCursor]
  }
  @inline(__always) func nextBool() -> Bool {
    defer { boolCursor &+= 1 }
    return tape.bools[boolCursor]
  }
  @inline(__always) func nextFlag() -> Bool {
    defer { flagCursor &+= 1 }
    return tape.flags[flagCursor]
  }
  @inline(__always) func nextCount() -> Int {
    defer { countCursor &+= 1 }
    return tape.counts[countCursor]
  }
  @inline(__always) func nextKind() -> DecodingTape.Kind {
    defer { kindCursor &+= 1 }
    return tape.kinds[kindCursor]
  }

  /// The next value of a generic `decode`, chosen as ``TapeRecorder/record(_:as:)`` chose.
  /// `unsafeBitCast` after the identity test: `T` is that type, so nothing is converted and
  /// no dynamic cast runs.
  func value<T: Decodable>(_ type: T.Type) throws -> T {
    if T.self == String.self { return unsafeBitCast(nextString(), to: T.self) }
    if T.self == Int.self { return unsafeBitCast(nextInteger(Int.self), to: T.self) }
    if T.self == Double.self { return unsafeBitCast(nextDouble(), to: T.self) }
    if T.self == Bool.self { return unsafeBitCast(nextBool(), to: T.self) }
    if T.self == [String].self {
      defer { stringArrayCursor &+= 1 }
      return unsafeBitCast(tape.stringArrays[stringArrayCursor], to: T.self)
    }
    if T.self == [String: String].self {
      defer { stringDictionaryCursor &+= 1 }
      return unsafeBitCast(tape.stringDictionaries[stringDictionaryCursor], to: T.self)
    }
    if arrays == .direct, nextKind() == .array {
      // Recorded only for types that are `TapeArray`s, so the cast cannot fail.
      let arrayType = T.self as! any TapeArray.Type
      return try arrayType.replay(count: nextCount(), decoder: self, as: T.self)
    }
    return try T(from: self)
  }

  // MARK: Single-value container

  func decodeNil() -> Bool { nextFlag() }
  func decode(_ type: Bool.Type) -> Bool { nextBool() }
  func decode(_ type: String.Type) -> String { nextString() }
  func decode(_ type: Double.Type) -> Double { nextDouble() }
  func decode(_ type: Float.Type) -> Float { nextFloat() }
  func decode(_ type: Int.Type) -> Int { nextInteger() }
  func decode(_ type: Int8.Type) -> Int8 { nextInteger() }
  func decode(_ type: Int16.Type) -> Int16 { nextInteger() }
  func decode(_ type: Int32.Type) -> Int32 { nextInteger() }
  func decode(_ type: Int64.Type) -> Int64 { nextInteger() }
  func decode(_ type: Int128.Type) -> Int128 { nextInteger() }
  func decode(_ type: UInt.Type) -> UInt { nextInteger() }
  func decode(_ type: UInt8.Type) -> UInt8 { nextInteger() }
  func decode(_ type: UInt16.Type) -> UInt16 { nextInteger() }
  func decode(_ type: UInt32.Type) -> UInt32 { nextInteger() }
  func decode(_ type: UInt64.Type) -> UInt64 { nextInteger() }
  func decode(_ type: UInt128.Type) -> UInt128 { nextInteger() }
  func decode<T: Decodable>(_ type: T.Type) throws -> T { try value(type) }
}

/// The keyed container of ``ReplayDecoder``: ignores the key, reads the tape. A struct of
/// one reference, so the box's copies cost one retain.
struct ReplayKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
  let decoder: ReplayDecoder

  var codingPath: [any CodingKey] { [] }

  var allKeys: [Key] {
    (0..<decoder.nextCount()).compactMap { _ in Key(stringValue: decoder.nextString()) }
  }

  func contains(_ key: Key) -> Bool { decoder.nextFlag() }

  func decodeNil(forKey key: Key) -> Bool { decoder.nextFlag() }
  func decode(_ type: Bool.Type, forKey key: Key) -> Bool { decoder.nextBool() }
  func decode(_ type: String.Type, forKey key: Key) -> String { decoder.nextString() }
  func decode(_ type: Double.Type, forKey key: Key) -> Double { decoder.nextDouble() }
  func decode(_ type: Float.Type, forKey key: Key) -> Float { decoder.nextFloat() }
  func decode(_ type: Int.Type, forKey key: Key) -> Int { decoder.nextInteger() }
  func decode(_ type: Int8.Type, forKey key: Key) -> Int8 { decoder.nextInteger() }
  func decode(_ type: Int16.Type, forKey key: Key) -> Int16 { decoder.nextInteger() }
  func decode(_ type: Int32.Type, forKey key: Key) -> Int32 { decoder.nextInteger() }
  func decode(_ type: Int64.Type, forKey key: Key) -> Int64 { decoder.nextInteger() }
  func decode(_ type: Int128.Type, forKey key: Key) -> Int128 { decoder.nextInteger() }
  func decode(_ type: UInt.Type, forKey key: Key) -> UInt { decoder.nextInteger() }
  func decode(_ type: UInt8.Type, forKey key: Key) -> UInt8 { decoder.nextInteger() }
  func decode(_ type: UInt16.Type, forKey key: Key) -> UInt16 { decoder.nextInteger() }
  func decode(_ type: UInt32.Type, forKey key: Key) -> UInt32 { decoder.nextInteger() }
  func decode(_ type: UInt64.Type, forKey key: Key) -> UInt64 { decoder.nextInteger() }
  func decode(_ type: UInt128.Type, forKey key: Key) -> UInt128 { decoder.nextInteger() }
  func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try decoder.value(type) }

  // One flag each, where the standard library's defaults would ask `contains` and `decodeNil`.
  func decodeIfPresent(_ type: Bool.Type, forKey key: Key) -> Bool? {
    decoder.nextFlag() ? decoder.nextBool() : nil
  }
  func decodeIfPresent(_ type: String.Type, forKey key: Key) -> String? {
    decoder.nextFlag() ? decoder.nextString() : nil
  }
  func decodeIfPresent(_ type: Double.Type, forKey key: Key) -> Double? {
    decoder.nextFlag() ? decoder.nextDouble() : nil
  }
  func decodeIfPresent(_ type: Float.Type, forKey key: Key) -> Float? {
    decoder.nextFlag() ? decoder.nextFloat() : nil
  }
  func decodeIfPresent(_ type: Int.Type, forKey key: Key) -> Int? { integerIfPresent() }
  func decodeIfPresent(_ type: Int8.Type, forKey key: Key) -> Int8? { integerIfPresent() }
  func decodeIfPresent(_ type: Int16.Type, forKey key: Key) -> Int16? { integerIfPresent() }
  func decodeIfPresent(_ type: Int32.Type, forKey key: Key) -> Int32? { integerIfPresent() }
  func decodeIfPresent(_ type: Int64.Type, forKey key: Key) -> Int64? { integerIfPresent() }
  func decodeIfPresent(_ type: Int128.Type, forKey key: Key) -> Int128? { integerIfPresent() }
  func decodeIfPresent(_ type: UInt.Type, forKey key: Key) -> UInt? { integerIfPresent() }
  func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) -> UInt8? { integerIfPresent() }
  func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) -> UInt16? { integerIfPresent() }
  func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) -> UInt32? { integerIfPresent() }
  func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) -> UInt64? { integerIfPresent() }
  func decodeIfPresent(_ type: UInt128.Type, forKey key: Key) -> UInt128? { integerIfPresent() }
  func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
    decoder.nextFlag() ? try decoder.value(type) : nil
  }

  private func integerIfPresent<Integer: FixedWidthInteger>() -> Integer? {
    decoder.nextFlag() ? decoder.nextInteger(Integer.self) : nil
  }

  func nestedContainer<NestedKey: CodingKey>(
    keyedBy type: NestedKey.Type, forKey key: Key
  ) -> KeyedDecodingContainer<NestedKey> {
    KeyedDecodingContainer(ReplayKeyedContainer<NestedKey>(decoder: decoder))
  }

  func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedDecodingContainer {
    ReplayUnkeyedContainer(decoder: decoder, elementCount: decoder.nextCount())
  }

  // The recorder refuses super decoders, so a tape never asks for one.
  func superDecoder() -> any Decoder { preconditionFailure("a tape records no super decoder") }
  func superDecoder(forKey key: Key) -> any Decoder { preconditionFailure("a tape records no super decoder") }
}

/// The unkeyed container of ``ReplayDecoder``: the recorded element count, then the tape.
struct ReplayUnkeyedContainer: UnkeyedDecodingContainer {
  let decoder: ReplayDecoder
  let elementCount: Int
  private(set) var currentIndex = 0

  init(decoder: ReplayDecoder, elementCount: Int) {
    self.decoder = decoder
    self.elementCount = elementCount
  }

  var codingPath: [any CodingKey] { [] }
  var count: Int? { elementCount }
  var isAtEnd: Bool { currentIndex >= elementCount }

  mutating func decodeNil() -> Bool {
    let isNull = decoder.nextFlag()
    if isNull { currentIndex &+= 1 }
    return isNull
  }

  /// Counts one element read and returns `value`.
  private mutating func advance<Value>(_ value: Value) -> Value {
    currentIndex &+= 1
    return value
  }

  mutating func decode(_ type: Bool.Type) -> Bool { advance(decoder.nextBool()) }
  mutating func decode(_ type: String.Type) -> String { advance(decoder.nextString()) }
  mutating func decode(_ type: Double.Type) -> Double { advance(decoder.nextDouble()) }
  mutating func decode(_ type: Float.Type) -> Float { advance(decoder.nextFloat()) }
  mutating func decode(_ type: Int.Type) -> Int { advance(decoder.nextInteger()) }
  mutating func decode(_ type: Int8.Type) -> Int8 { advance(decoder.nextInteger()) }
  mutating func decode(_ type: Int16.Type) -> Int16 { advance(decoder.nextInteger()) }
  mutating func decode(_ type: Int32.Type) -> Int32 { advance(decoder.nextInteger()) }
  mutating func decode(_ type: Int64.Type) -> Int64 { advance(decoder.nextInteger()) }
  mutating func decode(_ type: Int128.Type) -> Int128 { advance(decoder.nextInteger()) }
  mutating func decode(_ type: UInt.Type) -> UInt { advance(decoder.nextInteger()) }
  mutating func decode(_ type: UInt8.Type) -> UInt8 { advance(decoder.nextInteger()) }
  mutating func decode(_ type: UInt16.Type) -> UInt16 { advance(decoder.nextInteger()) }
  mutating func decode(_ type: UInt32.Type) -> UInt32 { advance(decoder.nextInteger()) }
  mutating func decode(_ type: UInt64.Type) -> UInt64 { advance(decoder.nextInteger()) }
  mutating func decode(_ type: UInt128.Type) -> UInt128 { advance(decoder.nextInteger()) }
  mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { advance(try decoder.value(type)) }

  mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type)
    -> KeyedDecodingContainer<NestedKey>
  {
    advance(KeyedDecodingContainer(ReplayKeyedContainer<NestedKey>(decoder: decoder)))
  }

  mutating func nestedUnkeyedContainer() -> any UnkeyedDecodingContainer {
    advance(ReplayUnkeyedContainer(decoder: decoder, elementCount: decoder.nextCount()))
  }

  mutating func superDecoder() -> any Decoder { preconditionFailure("a tape records no super decoder") }
}
