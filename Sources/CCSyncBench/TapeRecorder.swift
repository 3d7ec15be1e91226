// The recording pass of the replay floor: a plain decoder over a `JSONValue` tree that
// writes every answer it gives onto a `DecodingTape`.
import CCSync
import CCSyncProcesses

/// A recording could not be made: the tree does not hold what the type asks for, or the
/// type uses a part of `Decoder` the tape does not record.
struct TapeRecordingError: Error, CustomStringConvertible {
  var description: String
}

/// Decodes from a `JSONValue` tree by looking every key up, and records each answer on
/// ``tape`` in call order, so that ``ReplayDecoder`` can give the same answers to the same
/// calls. It makes the same choices the replay must repeat: `String`, `Int`, `Double`,
/// `Bool`, `[String]` and `[String: String]` are answered whole by a generic `decode`, arrays
/// element by element, everything else through its type's `init(from:)`.
///
/// Speed does not matter here; it runs once, untimed.
final class TapeRecorder: Decoder, SingleValueDecodingContainer {
  var tape = DecodingTape()
  /// The value whose `init(from:)` is running.
  var value: JSONValue

  init(_ value: JSONValue) { self.value = value }

  /// Records a decode of `type` from `tree`.
  static func record<T: Decodable>(_ type: T.Type, from tree: JSONValue) throws -> (T, DecodingTape) {
    let recorder = TapeRecorder(tree)
    let result = try recorder.record(tree, as: T.self)
    return (result, recorder.tape)
  }

  var codingPath: [any CodingKey] { [] }
  var userInfo: [CodingUserInfoKey: Any] { [:] }

  func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
    guard case .object(let object) = value else { throw TapeRecordingError(description: "expected an object for \(Key.self)") }
    return KeyedDecodingContainer(RecordingKeyedContainer<Key>(recorder: self, object: object))
  }

  func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
    guard case .array(let elements) = value else { throw TapeRecordingError(description: "expected an array") }
    tape.counts.append(elements.count)
    return RecordingUnkeyedContainer(recorder: self, elements: elements)
  }

  func singleValueContainer() -> any SingleValueDecodingContainer { self }

  // MARK: Recording one value

  func record<T: Decodable>(_ value: JSONValue, as type: T.Type) throws -> T {
    if T.self == String.self { return try string(value) as! T }
    if T.self == Int.self { return try integer(value, as: Int.self) as! T }
    if T.self == Double.self { return try double(value) as! T }
    if T.self == Bool.self { return try bool(value) as! T }
    if T.self == [String].self {
      guard case .array(let elements) = value else { throw TapeRecordingError(description: "expected [String]") }
      let strings = try elements.map { element -> String in
        guard case .string(let string) = element else { throw TapeRecordingError(description: "expected a string") }
        return string
      }
      tape.stringArrays.append(strings)
      return strings as! T
    }
    if T.self == [String: String].self {
      guard case .object(let object) = value else { throw TapeRecordingError(description: "expected [String: String]") }
      var dictionary: [String: String] = [:]
      for member in object.members {
        guard case .string(let string) = member.value else { throw TapeRecordingError(description: "expected a string") }
        dictionary[member.key] = string
      }
      tape.stringDictionaries.append(dictionary)
      return dictionary as! T
    }
    if case .array(let elements) = value, let arrayType = T.self as? any TapeArray.Type {
      tape.kinds.append(.array)
      tape.counts.append(elements.count)
      return try arrayType.record(elements, recorder: self) as! T
    }
    tape.kinds.append(.nested)
    let saved = self.value
    self.value = value
    defer { self.value = saved }
    return try T(from: self)
  }

  func string(_ value: JSONValue) throws -> String {
    guard case .string(let string) = value else { throw TapeRecordingError(description: "expected a string, found \(value.kindName)") }
    tape.strings.append(string)
    return string
  }

  func bool(_ value: JSONValue) throws -> Bool {
    guard case .bool(let bool) = value else { throw TapeRecordingError(description: "expected a Boolean, found \(value.kindName)") }
    tape.bools.append(bool)
    return bool
  }

  func double(_ value: JSONValue) throws -> Double {
    guard case .number(let number) = value else { throw TapeRecordingError(description: "expected a number, found \(value.kindName)") }
    tape.doubles.append(number.doubleValue)
    return number.doubleValue
  }

  func float(_ value: JSONValue) throws -> Float {
    guard case .number(let number) = value, let float = Float(number.text) else {
      throw TapeRecordingError(description: "expected a Float, found \(value.kindName)")
    }
    tape.floats.append(float)
    return float
  }

  /// An integer, kept as its bit pattern; the replay truncates it back, so the recording
  /// fails for a value that would not survive that (a 128-bit integer beyond 64 bits).
  func integer<Integer: FixedWidthInteger>(_ value: JSONValue, as type: Integer.Type) throws -> Integer {
    guard case .number(let number) = value,
      let integer = number.int64Value.flatMap({ Integer(exactly: $0) })
        ?? number.uint64Value.flatMap({ Integer(exactly: $0) })
    else {
      throw TapeRecordingError(description: "expected \(Integer.self), found \(value.kindName)")
    }
    let bits = UInt64(truncatingIfNeeded: integer)
    guard Integer(truncatingIfNeeded: bits) == integer else {
      throw TapeRecordingError(description: "\(integer) does not fit in the tape's 64 bits")
    }
    tape.integers.append(bits)
    return integer
  }

  /// Records whether a value is there (a present member, a non-null value).
  func flag(_ present: Bool) -> Bool {
    tape.flags.append(present)
    return present
  }

  // MARK: Single-value container

  func decodeNil() -> Bool { flag(value.isNull) }
  func decode(_ type: Bool.Type) throws -> Bool { try bool(value) }
  func decode(_ type: String.Type) throws -> String { try string(value) }
  func decode(_ type: Double.Type) throws -> Double { try double(value) }
  func decode(_ type: Float.Type) throws -> Float { try float(value) }
  func decode(_ type: Int.Type) throws -> Int { try integer(value, as: type) }
  func decode(_ type: Int8.Type) throws -> Int8 { try integer(value, as: type) }
  func decode(_ type: Int16.Type) throws -> Int16 { try integer(value, as: type) }
  func decode(_ type: Int32.Type) throws -> Int32 { try integer(value, as: type) }
  func decode(_ type: Int64.Type) throws -> Int64 { try integer(value, as: type) }
  func decode(_ type: Int128.Type) throws -> Int128 { try integer(value, as: type) }
  func decode(_ type: UInt.Type) throws -> UInt { try integer(value, as: type) }
  func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(value, as: type) }
  func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(value, as: type) }
  func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(value, as: type) }
  func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(value, as: type) }
  func decode(_ type: UInt128.Type) throws -> UInt128 { try integer(value, as: type) }
  func decode<T: Decodable>(_ type: T.Type) throws -> T { try record(value, as: type) }
}

/// The keyed container of ``TapeRecorder``: looks each key up in the object.
struct RecordingKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
  let recorder: TapeRecorder
  let object: JSONObject

  var codingPath: [any CodingKey] { [] }

  var allKeys: [Key] {
    let keys = object.members.compactMap { Key(stringValue: $0.key) }
    recorder.tape.counts.append(keys.count)
    recorder.tape.strings += keys.map(\.stringValue)
    return keys
  }

  func contains(_ key: Key) -> Bool { recorder.flag(object[key.stringValue] != nil) }

  private func member(_ key: Key) throws -> JSONValue {
    guard let value = object[key.stringValue] else { throw TapeRecordingError(description: "missing key \(key.stringValue)") }
    return value
  }

  /// The member for `key` unless it is missing or `null`, and a flag saying which.
  private func presentMember(_ key: Key) -> JSONValue? {
    guard let value = object[key.stringValue], !value.isNull else {
      _ = recorder.flag(false)
      return nil
    }
    _ = recorder.flag(true)
    return value
  }

  func decodeNil(forKey key: Key) throws -> Bool { recorder.flag(try member(key).isNull) }
  func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try recorder.bool(member(key)) }
  func decode(_ type: String.Type, forKey key: Key) throws -> String { try recorder.string(member(key)) }
  func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try recorder.double(member(key)) }
  func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try recorder.float(member(key)) }
  func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try recorder.integer(member(key), as: type) }
  func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try recorder.integer(member(key), as: type) }
  func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try recorder.integer(member(key), as: type) }
  func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try recorder.integer(member(key), as: type) }
  func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try recorder.integer(member(key), as: type) }
  func decode(_ type: Int128.Type, forKey key: Key) throws -> Int128 { try recorder.integer(member(key), as: type) }
  func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try recorder.integer(member(key), as: type) }
  func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try recorder.integer(member(key), as: type) }
  func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try recorder.integer(member(key), as: type) }
  func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try recorder.integer(member(key), as: type) }
  func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try recorder.integer(member(key), as: type) }
  func decode(_ type: UInt128.Type, forKey key: Key) throws -> UInt128 { try recorder.integer(member(key), as: type) }
  func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try recorder.record(member(key), as: type) }

  func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try presentMember(key).map(recorder.bool) }
  func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try presentMember(key).map(recorder.string) }
  func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try presentMember(key).map(recorder.double) }
  func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try presentMember(key).map(recorder.float) }
  func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try integerIfPresent(key) }
  func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try integerIfPresent(key) }
  func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try integerIfPresent(key) }
  func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try integerIfPresent(key) }
  func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try integerIfPresent(key) }
  func decodeIfPresent(_ type: Int128.Type, forKey key: Key) throws -> Int128? { try integerIfPresent(key) }
  func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try integerIfPresent(key) }
  func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try integerIfPresent(key) }
  func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try integerIfPresent(key) }
  func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try integerIfPresent(key) }
  func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try integerIfPresent(key) }
  func decodeIfPresent(_ type: UInt128.Type, forKey key: Key) throws -> UInt128? { try integerIfPresent(key) }
  func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
    guard let value = presentMember(key) else { return nil }
    return try recorder.record(value, as: type)
  }

  private func integerIfPresent<Integer: FixedWidthInteger>(_ key: Key) throws -> Integer? {
    guard let value = presentMember(key) else { return nil }
    return try recorder.integer(value, as: Integer.self)
  }

  func nestedContainer<NestedKey: CodingKey>(
    keyedBy type: NestedKey.Type, forKey key: Key
  ) throws -> KeyedDecodingContainer<NestedKey> {
    guard case .object(let nested) = try member(key) else { throw TapeRecordingError(description: "expected an object") }
    return KeyedDecodingContainer(RecordingKeyedContainer<NestedKey>(recorder: recorder, object: nested))
  }

  func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
    guard case .array(let elements) = try member(key) else { throw TapeRecordingError(description: "expected an array") }
    recorder.tape.counts.append(elements.count)
    return RecordingUnkeyedContainer(recorder: recorder, elements: elements)
  }

  func superDecoder() throws -> any Decoder { throw TapeRecordingError(description: "superDecoder is not recorded") }
  func superDecoder(forKey key: Key) throws -> any Decoder {
    throw TapeRecordingError(description: "superDecoder is not recorded")
  }
}

/// The unkeyed container of ``TapeRecorder``: records the element count when it is made
/// (the replay's `count`), then each element as it is read.
struct RecordingUnkeyedContainer: UnkeyedDecodingContainer {
  let recorder: TapeRecorder
  let elements: [JSONValue]
  private(set) var currentIndex = 0

  init(recorder: TapeRecorder, elements: [JSONValue]) {
    self.recorder = recorder
    self.elements = elements
  }

  var codingPath: [any CodingKey] { [] }
  var count: Int? { elements.count }
  var isAtEnd: Bool { currentIndex >= elements.count }

  private mutating func next() throws -> JSONValue {
    guard currentIndex < elements.count else { throw TapeRecordingError(description: "read past the end of an array") }
    currentIndex += 1
    return elements[currentIndex - 1]
  }

  mutating func decodeNil() throws -> Bool {
    guard currentIndex < elements.count else { throw TapeRecordingError(description: "read past the end of an array") }
    let isNull = recorder.flag(elements[currentIndex].isNull)
    if isNull { currentIndex += 1 }
    return isNull
  }

  mutating func decode(_ type: Bool.Type) throws -> Bool { try recorder.bool(next()) }
  mutating func decode(_ type: String.Type) throws -> String { try recorder.string(next()) }
  mutating func decode(_ type: Double.Type) throws -> Double { try recorder.double(next()) }
  mutating func decode(_ type: Float.Type) throws -> Float { try recorder.float(next()) }
  mutating func decode(_ type: Int.Type) throws -> Int { try recorder.integer(next(), as: type) }
  mutating func decode(_ type: Int8.Type) throws -> Int8 { try recorder.integer(next(), as: type) }
  mutating func decode(_ type: Int16.Type) throws -> Int16 { try recorder.integer(next(), as: type) }
  mutating func decode(_ type: Int32.Type) throws -> Int32 { try recorder.integer(next(), as: type) }
  mutating func decode(_ type: Int64.Type) throws -> Int64 { try recorder.integer(next(), as: type) }
  mutating func decode(_ type: Int128.Type) throws -> Int128 { try recorder.integer(next(), as: type) }
  mutating func decode(_ type: UInt.Type) throws -> UInt { try recorder.integer(next(), as: type) }
  mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try recorder.integer(next(), as: type) }
  mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try recorder.integer(next(), as: type) }
  mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try recorder.integer(next(), as: type) }
  mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try recorder.integer(next(), as: type) }
  mutating func decode(_ type: UInt128.Type) throws -> UInt128 { try recorder.integer(next(), as: type) }
  mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try recorder.record(next(), as: type) }

  mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
    -> KeyedDecodingContainer<NestedKey>
  {
    guard case .object(let nested) = try next() else { throw TapeRecordingError(description: "expected an object") }
    return KeyedDecodingContainer(RecordingKeyedContainer<NestedKey>(recorder: recorder, object: nested))
  }

  mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
    guard case .array(let nested) = try next() else { throw TapeRecordingError(description: "expected an array") }
    recorder.tape.counts.append(nested.count)
    return RecordingUnkeyedContainer(recorder: recorder, elements: nested)
  }

  mutating func superDecoder() throws -> any Decoder { throw TapeRecordingError(description: "superDecoder is not recorded") }
}
