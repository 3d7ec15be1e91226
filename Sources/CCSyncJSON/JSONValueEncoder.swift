import CCSyncSystem
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Encodes `Encodable` values straight into ``JSONValue`` trees, without going through JSON
/// text.
///
/// - Object members come out in the order the type encodes them (the `CodingKeys` order for
///   synthesized conformances). Encoding a key twice replaces its value where it stands.
/// - Integers of every width become their exact decimal text; `Double` and `Float` their
///   shortest round-trip text. Infinity and NaN throw `EncodingError.invalidValue` unless
///   ``nonConformingFloatEncodingStrategy`` turns them into strings.
/// - `Date` follows ``dateEncodingStrategy`` (ISO 8601 by default), `Data` follows
///   ``dataEncodingStrategy`` (base64 by default), `URL` becomes its `absoluteString`,
///   `Decimal` a number with its digits (as Foundation's `JSONEncoder` writes both).
/// - Dictionaries whose keys are `String`, `Int` or `CodingKeyRepresentable` become objects
///   (an `Int` key `1` as the member name `"1"`); dictionaries with any other key type become
///   an array of alternating keys and values. That is what the standard library's
///   `Dictionary` conformance asks for, and Foundation's `JSONEncoder` writes the same.
///   Because a `Dictionary`'s own order changes from process to process, members that come
///   from a `Dictionary` are written sorted: numerically when every key is an integer,
///   otherwise by key. Every other object keeps the order its type encoded.
/// - `nil` optionals in synthesized conformances are left out (`encodeIfPresent`);
///   `encodeNil` writes `null`.
///
/// The encoder is a value: configure a copy, then call ``encode(_:)`` from any thread.
/// `Sendable`.
public struct JSONValueEncoder: Sendable {
  /// How dates are written. Default: ``DateEncodingStrategy/iso8601``.
  public var dateEncodingStrategy: DateEncodingStrategy = .iso8601
  /// How `Data` is written. Default: ``DataEncodingStrategy/base64``.
  public var dataEncodingStrategy: DataEncodingStrategy = .base64
  /// What to do with infinity and NaN. Default: ``NonConformingFloatEncodingStrategy/throw``.
  public var nonConformingFloatEncodingStrategy: NonConformingFloatEncodingStrategy = .throw
  /// Values the encoded types can read through `Encoder.userInfo`.
  public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

  /// An encoder with the default strategies.
  public init() {}

  /// Encodes `value` as a JSON value.
  ///
  /// - Parameter value: the value to encode; any `Encodable`, including a bare number or
  ///   string.
  /// - Returns: the JSON tree.
  /// - Throws: `EncodingError.invalidValue` with the coding path of the offending value when
  ///   a float is not finite (and the strategy says throw), a date has no ISO 8601 spelling,
  ///   a type encodes nothing at the top level, or a type asks for two different kinds of
  ///   container at one path; any error a type's `encode(to:)` throws.
  public func encode<T: Encodable>(_ value: T) throws -> JSONValue {
    let state = JSONValueEncoderState(options: self)
    let encoder = JSONValueEncoderImpl(state: state, pathNode: .root)
    let result = try encoder.wrapIfEncoded(value, parent: .root, step: .none)
    if let misuse = state.misuse { throw misuse }
    guard let result else {
      throw EncodingError.invalidValue(
        value,
        EncodingError.Context(
          codingPath: [], debugDescription: "top-level \(T.self) did not encode any values"))
    }
    return result
  }
}

/// What all encoders of one ``JSONValueEncoder/encode(_:)`` call share.
package final class JSONValueEncoderState {
  package let options: JSONValueEncoder
  package let userInfo: [CodingUserInfoKey: Any]
  /// The first container misuse seen; reported when encoding ends, since the `Encoder`
  /// methods that detect it cannot throw and trapping is not an option in this library.
  package var misuse: EncodingError?
  /// Whether each of the types this call encoded most recently is a dictionary (see
  /// ``JSONValueEncoderImpl/isDictionary(_:)``).
  @exclusivity(unchecked) package var recentTypes = RecentTypeAnswers()

  package init(options: JSONValueEncoder) {
    self.options = options
    userInfo = options.userInfo
  }

  package func recordMisuse(at path: [any CodingKey], _ message: String) {
    guard misuse == nil else { return }
    misuse = EncodingError.invalidValue(
      (), EncodingError.Context(codingPath: path, debugDescription: message))
  }
}

/// The `Encoder` handed to `encode(to:)`. One instance serves a whole nested encode: going
/// into a nested value saves `pathNode` and `storage`, encodes, and restores them, so no
/// encoder is allocated per value. Only `superEncoder()` makes a new one, because that one
/// outlives the call that creates it.
///
/// Containers fill reference-type buffers (``ObjectBuffer``, ``ArrayBuffer``). When a nested
/// value's `encode(to:)` returns, its buffer is finished into a `JSONValue` once and stored
/// in the parent's buffer, so no tree is rebuilt or copied as it grows.
package final class JSONValueEncoderImpl: Encoder, SingleValueEncodingContainer {
  package let state: JSONValueEncoderState
  // Unchecked exclusivity: an encoder belongs to one encode call on one thread, and no
  // access to these is held across a call out to other code (see `encodeNested`).
  @exclusivity(unchecked) package var pathNode: CodingPathNode
  /// What the value being encoded has produced so far: nothing yet, a finished value, or a
  /// container buffer still being filled.
  @exclusivity(unchecked) package var storage: EncoderStorage?

  package init(state: JSONValueEncoderState, pathNode: CodingPathNode) {
    self.state = state
    self.pathNode = pathNode
  }

  package var codingPath: [any CodingKey] { pathNode.path }
  package var userInfo: [CodingUserInfoKey: Any] { state.userInfo }

  package func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
    let buffer: ObjectBuffer
    if case .object(let existing)? = storage {
      buffer = existing
    } else {
      if storage != nil {
        state.recordMisuse(at: codingPath, "keyed container requested after another value was encoded here")
      }
      buffer = ObjectBuffer()
      storage = .object(buffer)
    }
    return KeyedEncodingContainer(
      JSONKeyedEncodingContainer<Key>(encoder: self, buffer: buffer, pathNode: pathNode))
  }

  package func unkeyedContainer() -> any UnkeyedEncodingContainer {
    let buffer: ArrayBuffer
    if case .array(let existing)? = storage {
      buffer = existing
    } else {
      if storage != nil {
        state.recordMisuse(at: codingPath, "unkeyed container requested after another value was encoded here")
      }
      buffer = ArrayBuffer()
      storage = .array(buffer)
    }
    return JSONUnkeyedEncodingContainer(encoder: self, buffer: buffer, pathNode: pathNode)
  }

  package func singleValueContainer() -> any SingleValueEncodingContainer { self }

  // MARK: Single-value container

  private func setSingleValue(_ value: JSONValue) {
    if storage != nil {
      state.recordMisuse(at: codingPath, "single value encoded after another value was encoded here")
    }
    storage = .value(value)
  }

  package func encodeNil() { setSingleValue(.null) }
  package func encode(_ value: Bool) { setSingleValue(.bool(value)) }
  package func encode(_ value: String) { setSingleValue(.string(value)) }
  package func encode(_ value: Double) throws { setSingleValue(try box(value, parent: pathNode, step: .none)) }
  package func encode(_ value: Float) throws { setSingleValue(try box(value, parent: pathNode, step: .none)) }
  package func encode(_ value: Int) { setSingleValue(.number(JSONNumber(integer: Int64(value)))) }
  package func encode(_ value: Int8) { setSingleValue(.number(JSONNumber(integer: Int64(value)))) }
  package func encode(_ value: Int16) { setSingleValue(.number(JSONNumber(integer: Int64(value)))) }
  package func encode(_ value: Int32) { setSingleValue(.number(JSONNumber(integer: Int64(value)))) }
  package func encode(_ value: Int64) { setSingleValue(.number(JSONNumber(integer: Int64(value)))) }
  package func encode(_ value: Int128) { setSingleValue(.number(JSONNumber(value))) }
  package func encode(_ value: UInt) { setSingleValue(.number(JSONNumber(integer: UInt64(value)))) }
  package func encode(_ value: UInt8) { setSingleValue(.number(JSONNumber(integer: UInt64(value)))) }
  package func encode(_ value: UInt16) { setSingleValue(.number(JSONNumber(integer: UInt64(value)))) }
  package func encode(_ value: UInt32) { setSingleValue(.number(JSONNumber(integer: UInt64(value)))) }
  package func encode(_ value: UInt64) { setSingleValue(.number(JSONNumber(integer: UInt64(value)))) }
  package func encode(_ value: UInt128) { setSingleValue(.number(JSONNumber(value))) }
  package func encode<T: Encodable>(_ value: T) throws {
    setSingleValue(try wrap(value, parent: pathNode, step: .none))
  }

  // MARK: Values

  /// Encodes one value found at `step` below `parent`. A value that encodes nothing becomes
  /// an empty object, as Foundation's encoder writes it.
  package func wrap<T: Encodable>(_ value: T, parent: CodingPathNode, step: @autoclosure () -> CodingPathStep) throws -> JSONValue {
    try wrapIfEncoded(value, parent: parent, step: step()) ?? .object(JSONObject())
  }

  /// Encodes one value found at `step` below `parent`, or returns `nil` when its
  /// `encode(to:)` encodes nothing. The common leaf types go straight to a `JSONValue`;
  /// everything else runs its `encode(to:)` on this encoder.
  package func wrapIfEncoded<T: Encodable>(_ value: T, parent: CodingPathNode, step: @autoclosure () -> CodingPathStep) throws -> JSONValue? {
    if let leaf = try leaf(value, parent: parent, step: step()) { return leaf }
    guard let storage = try encodeNested(at: parent.appending(step()), { try value.encode(to: $0) }) else {
      return nil
    }
    if case .object(let buffer) = storage, isDictionary(T.self) {
      buffer.sortMembersByKey()
    }
    return storage.finish()
  }

  /// The value of one of the types this encoder writes without running `encode(to:)`
  /// (strings, numbers, Booleans, dates, data, URLs, arrays of strings or integers,
  /// `[String: String]`), or `nil` for any other type.
  /// `parent` is only evaluated when a path is needed (an error, a custom date or data
  /// strategy), so a caller that keeps its path in another shape builds it only then.
  package func leaf<T: Encodable>(
    _ value: T, parent: @autoclosure () -> CodingPathNode, step: @autoclosure () -> CodingPathStep
  ) throws -> JSONValue? {
    if T.self == String.self { return .string(value as! String) }
    if T.self == Int.self { return .number(JSONNumber(integer: Int64(value as! Int))) }
    if T.self == Double.self { return try box(value as! Double, parent: parent(), step: step()) }
    if T.self == Bool.self { return .bool(value as! Bool) }
    if T.self == Date.self { return try wrap(date: value as! Date, parent: parent(), step: step()) }
    if T.self == Data.self { return try wrap(data: value as! Data, parent: parent(), step: step()) }
    if T.self == URL.self { return .string((value as! URL).absoluteString) }
    if T.self == Decimal.self { return try wrap(decimal: value as! Decimal, parent: parent(), step: step()) }
    if T.self == [String].self { return .array((value as! [String]).map { .string($0) }) }
    if T.self == [Int].self { return .array((value as! [Int]).map { .number(JSONNumber(integer: Int64($0))) }) }
    if T.self == [String: String].self { return encodeStringDictionary(value as! [String: String]) }
    return nil
  }

  /// Which types are dictionaries, for every encode in the process.
  package static let dictionaryTypes = TypeConformanceCache { $0 is any EncodableDictionaryMarker.Type }

  /// Whether `type` is a `Dictionary` (its members are then sorted by key). The conformance
  /// lookup behind `is` was made for every object encoded; the answers for the few types this
  /// call met most recently are kept in a short list, and all answers in ``dictionaryTypes``.
  package func isDictionary(_ type: Any.Type) -> Bool {
    state.recentTypes.answer(for: type, from: JSONValueEncoderImpl.dictionaryTypes)
  }

  /// `[String: String]` without the standard library's `Dictionary.encode(to:)` (a keyed
  /// container per dictionary, unspecialized): the same members, sorted the same way.
  private func encodeStringDictionary(_ dictionary: [String: String]) -> JSONValue {
    let buffer = ObjectBuffer()
    for (key, value) in dictionary { buffer.set(key, .string(value)) }
    buffer.sortMembersByKey()
    return .object(buffer.finish())
  }

  /// Runs `body` with this encoder moved to `node` and an empty storage, then restores it
  /// and returns what `body` encoded.
  private func encodeNested(
    at node: CodingPathNode, _ body: (JSONValueEncoderImpl) throws -> Void
  ) throws -> EncoderStorage? {
    let savedStorage = storage
    let savedPathNode = pathNode
    storage = nil
    pathNode = node
    defer {
      storage = savedStorage
      pathNode = savedPathNode
    }
    try body(self)
    return storage
  }

  /// A `Decimal` as a number with its decimal digits, as Foundation's `JSONEncoder` writes it
  /// (not the struct's own fields, which its `encode(to:)` writes); NaN throws.
  private func wrap(decimal: Decimal, parent: CodingPathNode, step: @autoclosure () -> CodingPathStep) throws -> JSONValue {
    guard let number = JSONNumber(text: decimal.description) else {
      throw EncodingError.invalidValue(
        decimal,
        EncodingError.Context(codingPath: parent.path(appending: step()), debugDescription: "Decimal \(decimal) is not a JSON number"))
    }
    return .number(number)
  }

  private func wrap(date: Date, parent: CodingPathNode, step: @autoclosure () -> CodingPathStep) throws -> JSONValue {
    switch state.options.dateEncodingStrategy {
    case .iso8601:
      guard let text = ISO8601Timestamp.string(from: date) else {
        throw EncodingError.invalidValue(
          date,
          EncodingError.Context(
            codingPath: parent.path(appending: step()),
            debugDescription: "date \(date.timeIntervalSince1970) s after 1970 is outside the years 0000 to 9999 that ISO 8601 spells"))
      }
      return .string(text)
    case .secondsSince1970:
      return try box(date.timeIntervalSince1970, parent: parent, step: step())
    case .millisecondsSince1970:
      return try box(date.timeIntervalSince1970 * 1000, parent: parent, step: step())
    case .deferredToDate:
      return try encodeNestedValue(at: parent.appending(step())) { try date.encode(to: $0) }
    case .custom(let closure):
      return try encodeNestedValue(at: parent.appending(step())) { try closure(date, $0) }
    }
  }

  /// What `body` encodes on this encoder moved to `node`; an empty object if nothing, as
  /// Foundation's encoder writes it.
  private func encodeNestedValue(at node: CodingPathNode, _ body: (JSONValueEncoderImpl) throws -> Void) throws -> JSONValue {
    try encodeNested(at: node, body)?.finish() ?? .object(JSONObject())
  }

  private func wrap(data: Data, parent: CodingPathNode, step: @autoclosure () -> CodingPathStep) throws -> JSONValue {
    switch state.options.dataEncodingStrategy {
    case .base64:
      return .string(data.base64EncodedString())
    case .deferredToData:
      return try encodeNestedValue(at: parent.appending(step())) { try data.encode(to: $0) }
    case .custom(let closure):
      return try encodeNestedValue(at: parent.appending(step())) { try closure(data, $0) }
    }
  }

  /// `parent` is only evaluated for a value JSON cannot spell (see ``leaf(_:parent:step:)``).
  package func box(_ value: Double, parent: @autoclosure () -> CodingPathNode, step: @autoclosure () -> CodingPathStep) throws -> JSONValue {
    if let number = JSONNumber(exactly: value) { return .number(number) }
    return try nonConforming(value, typeName: "Double", parent: parent(), step: step())
  }

  package func box(_ value: Float, parent: @autoclosure () -> CodingPathNode, step: @autoclosure () -> CodingPathStep) throws -> JSONValue {
    guard value.isFinite else {
      return try nonConforming(Double(value), typeName: "Float", parent: parent(), step: step())
    }
    return .number(JSONNumber(float: value))
  }

  private func nonConforming(
    _ value: Double, typeName: String, parent: CodingPathNode, step: @autoclosure () -> CodingPathStep
  ) throws -> JSONValue {
    let strategy = state.options.nonConformingFloatEncodingStrategy
    if case .convertToString(let positiveInfinity, let negativeInfinity, let nan) = strategy {
      return .string(value.isNaN ? nan : value < 0 ? negativeInfinity : positiveInfinity)
    }
    let spelled = value.isNaN ? "\(typeName).nan" : value < 0 ? "-\(typeName).infinity" : "\(typeName).infinity"
    throw EncodingError.invalidValue(
      value,
      EncodingError.Context(
        codingPath: parent.path(appending: step()),
        debugDescription: "\(spelled) has no JSON spelling; set nonConformingFloatEncodingStrategy to write it as a string"))
  }
}

/// Marks `Dictionary` so the encoder can sort the members it produces (see
/// ``JSONValueEncoder``).
package protocol EncodableDictionaryMarker {}
extension Dictionary: EncodableDictionaryMarker {}

extension JSONNumber {
  /// A number from a finite `Float`, in `Float`'s own shortest round-trip text (`0.1`, not
  /// the `0.10000000149011612` its `Double` widening would print).
  package init(float value: Float) {
    if value == value.rounded(), abs(value) < 1e15 {
      self.init(Double(value))
    } else {
      self.init(uncheckedText: value.description)
    }
  }
}
