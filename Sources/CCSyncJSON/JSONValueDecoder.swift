import CCSyncSystem
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Decodes `Decodable` values straight from ``JSONValue`` trees, without going through JSON
/// text.
///
/// - Integer types need a number that is an exact integer in their range, whatever its
///   spelling (`1e3` decodes as `Int` 1000; `1.5`, or `300` into `UInt8`, throws).
///   `Double` and `Float` accept any number within their range.
/// - `Date` follows ``dateDecodingStrategy`` (ISO 8601 by default), `Data` follows
///   ``dataDecodingStrategy`` (base64 by default), `URL` is read from a string, `Decimal`
///   from a number (its exact digits, as Foundation's `JSONDecoder` reads it).
/// - Dictionaries mirror ``JSONValueEncoder``: `String`, `Int` and `CodingKeyRepresentable`
///   keys from objects, other keys from arrays of alternating keys and values.
/// - A missing key decodes as `nil` for an optional property; `null` for a non-optional one
///   throws `DecodingError.valueNotFound`.
///
/// Errors are Swift's `DecodingError` with the full coding path; their
/// `readableDescription` reads like `servers.1.port: expected Int, found string "80"`.
///
/// The decoder is a value: configure a copy, then call ``decode(_:from:)`` from any thread.
/// `Sendable`.
public struct JSONValueDecoder: Sendable {
  /// How dates are read. Default: ``DateDecodingStrategy/iso8601``.
  public var dateDecodingStrategy: DateDecodingStrategy = .iso8601
  /// How `Data` is read. Default: ``DataDecodingStrategy/base64``.
  public var dataDecodingStrategy: DataDecodingStrategy = .base64
  /// Which strings, if any, stand for infinity and NaN. Default:
  /// ``NonConformingFloatDecodingStrategy/throw``.
  public var nonConformingFloatDecodingStrategy: NonConformingFloatDecodingStrategy = .throw
  /// Values the decoded types can read through `Decoder.userInfo`.
  public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

  /// A decoder with the default strategies.
  public init() {}

  /// Decodes a value of `type` from `value`.
  ///
  /// - Parameters:
  ///   - type: the type to decode.
  ///   - value: the JSON tree; it is read, never copied.
  /// - Returns: the decoded value.
  /// - Throws: `DecodingError` with the coding path of the offending value: `typeMismatch`
  ///   for a value of the wrong kind, `valueNotFound` for `null` where a value is required,
  ///   `keyNotFound` for a missing member, `dataCorrupted` for a number out of range or not
  ///   an integer, a malformed date, base64 or URL; any error a type's `init(from:)` throws.
  public func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
    let state = JSONValueDecoderState(options: self)
    let decoder = JSONValueDecoderImpl(state: state, value: value, parentNode: .root, step: .none)
    return try decoder.unwrap(value, as: T.self, parent: .root, step: .none)
  }

  /// Decodes a value of `type` from `value`, taking a member `value` lacks from `fallback`
  /// (usually a default value encoded) at the same coding path.
  ///
  /// The fallback is consulted only when a keyed container is asked for a key the object
  /// lacks: `decode(_:forKey:)`, `decodeIfPresent(_:forKey:)`, `decodeNil(forKey:)`,
  /// `contains(_:)`, `nestedContainer` and `superDecoder(forKey:)`. `allKeys` lists the
  /// object's own keys only, so a dictionary (and any type that walks the keys present) gets
  /// exactly the document's entries, never the fallback's. Inside a member the object has,
  /// the fallback's member of the same name is the fallback, recursively; array elements have
  /// none.
  ///
  /// - Parameters:
  ///   - type: the type to decode.
  ///   - value: the JSON tree.
  ///   - fallback: where missing members come from; only an object has any effect.
  /// - Returns: the decoded value.
  /// - Throws: what ``decode(_:from:)`` throws; `keyNotFound` only for a key neither has.
  public func decode<T: Decodable>(_ type: T.Type, from value: JSONValue, missingMembersFrom fallback: JSONValue) throws -> T {
    let state = JSONValueDecoderState(options: self)
    let decoder = JSONValueDecoderImpl(state: state, value: value, parentNode: .root, step: .none)
    return try decoder.unwrap(value, as: T.self, parent: .root, step: .none, fallback: fallback.objectValue)
  }
}

/// What all decoders of one ``JSONValueDecoder/decode(_:from:)`` call share.
package final class JSONValueDecoderState {
  package let options: JSONValueDecoder
  package let userInfo: [CodingUserInfoKey: Any]
  /// Whether the types this call decoded from objects most recently are `[String: Value]`
  /// dictionaries (see ``JSONValueDecoderImpl/isStringKeyedDictionary(_:)``).
  @exclusivity(unchecked) package var recentTypes = RecentTypeAnswers()

  package init(options: JSONValueDecoder) {
    self.options = options
    userInfo = options.userInfo
  }
}

/// The `Decoder` handed to `init(from:)`. One instance serves a whole nested decode: going
/// into a nested value saves `value`, the path and `currentType`, decodes, and restores
/// them, so no decoder is allocated per value. Containers keep a reference to the object or
/// array they read (no copy, no dictionary built). Only `superDecoder()` makes a new decoder.
///
/// The path of the current value is kept as its parent's node and one step, not as a node
/// of its own: most values are structs of leaves, whose own node would be needed only for an
/// error, so it is made only when asked for (see ``JSONKeyedDecodingContainer/pathNode``).
package final class JSONValueDecoderImpl: Decoder, SingleValueDecodingContainer {
  package let state: JSONValueDecoderState
  // Unchecked exclusivity: a decoder belongs to one decode call on one thread, and no
  // access to these is held across a call out to other code (see `decodeNested`).
  @exclusivity(unchecked) package var value: JSONValue
  /// The node of the current value's parent; the value is ``step`` below it.
  @exclusivity(unchecked) package var parentNode: CodingPathNode
  /// The step from ``parentNode`` to the current value.
  @exclusivity(unchecked) package var step: CodingPathStep
  /// The type whose `init(from:)` is running, for error messages; `nil` in a super decoder.
  @exclusivity(unchecked) package var currentType: Any.Type?
  /// Where the next key of the current object probably is: one past the last member found.
  /// Types decode their keys in the order they encode them, which is the order in the text,
  /// so most lookups check one member instead of scanning.
  @exclusivity(unchecked) package var keyHint = 0
  /// Where the current value's missing members come from (see
  /// ``JSONValueDecoder/decode(_:from:missingMembersFrom:)``); `nil` in the usual decode.
  @exclusivity(unchecked) package var fallback: JSONObject?

  package init(state: JSONValueDecoderState, value: JSONValue, parentNode: CodingPathNode, step: CodingPathStep) {
    self.state = state
    self.value = value
    self.parentNode = parentNode
    self.step = step
  }

  /// The current value's path node, made now.
  package var pathNode: CodingPathNode { parentNode.appending(step) }

  package var codingPath: [any CodingKey] { pathNode.path }
  package var userInfo: [CodingUserInfoKey: Any] { state.userInfo }

  package func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
    guard case .object(let object) = value else {
      throw containerMismatch([String: Any].self, kind: "an object")
    }
    return KeyedDecodingContainer(
      JSONKeyedDecodingContainer<Key>(
        decoder: self, object: object, parentNode: parentNode, step: step, fallback: fallback))
  }

  package func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
    guard case .array(let elements) = value else {
      throw containerMismatch([Any].self, kind: "an array")
    }
    return JSONUnkeyedDecodingContainer(decoder: self, elements: elements, pathNode: pathNode)
  }

  package func singleValueContainer() -> any SingleValueDecodingContainer { self }

  private func containerMismatch(_ type: Any.Type, kind: String) -> DecodingError {
    let expected = currentType.map { "\($0) (\(kind))" } ?? kind
    return mismatch(type, value, parent: parentNode, step: step, expected: expected)
  }

  // MARK: Single-value container

  package func decodeNil() -> Bool { value.isNull }
  package func decode(_ type: Bool.Type) throws -> Bool { try unboxBool(value, parent: parentNode, step: step) }
  package func decode(_ type: String.Type) throws -> String { try unboxString(value, parent: parentNode, step: step) }
  package func decode(_ type: Double.Type) throws -> Double { try unboxDouble(value, parent: parentNode, step: step) }
  package func decode(_ type: Float.Type) throws -> Float { try unboxFloat(value, parent: parentNode, step: step) }
  package func decode(_ type: Int.Type) throws -> Int { try unboxInt(value, parent: parentNode, step: step) }
  package func decode(_ type: Int8.Type) throws -> Int8 { try unboxInteger(value, as: type, parent: parentNode, step: step) }
  package func decode(_ type: Int16.Type) throws -> Int16 { try unboxInteger(value, as: type, parent: parentNode, step: step) }
  package func decode(_ type: Int32.Type) throws -> Int32 { try unboxInteger(value, as: type, parent: parentNode, step: step) }
  package func decode(_ type: Int64.Type) throws -> Int64 { try unboxInteger(value, as: type, parent: parentNode, step: step) }
  package func decode(_ type: Int128.Type) throws -> Int128 { try unboxInteger(value, as: type, parent: parentNode, step: step) }
  package func decode(_ type: UInt.Type) throws -> UInt { try unboxInteger(value, as: type, parent: parentNode, step: step) }
  package func decode(_ type: UInt8.Type) throws -> UInt8 { try unboxInteger(value, as: type, parent: parentNode, step: step) }
  package func decode(_ type: UInt16.Type) throws -> UInt16 { try unboxInteger(value, as: type, parent: parentNode, step: step) }
  package func decode(_ type: UInt32.Type) throws -> UInt32 { try unboxInteger(value, as: type, parent: parentNode, step: step) }
  package func decode(_ type: UInt64.Type) throws -> UInt64 { try unboxInteger(value, as: type, parent: parentNode, step: step) }
  package func decode(_ type: UInt128.Type) throws -> UInt128 { try unboxInteger(value, as: type, parent: parentNode, step: step) }
  package func decode<T: Decodable>(_ type: T.Type) throws -> T {
    try unwrap(value, as: type, parent: parentNode, step: step, fallback: fallback)
  }

  // MARK: Values

  /// Decodes a `T` from `value`, found at `step` below `parent`. The common leaf types are
  /// read directly; everything else runs its `init(from:)` on this decoder.
  ///
  /// `parent` is evaluated only for an error or for a value that has a path of its own below
  /// it (an array, a dictionary, a struct with nested values). `fallback` is where the
  /// value's missing members come from (see ``JSONValueDecoder/decode(_:from:missingMembersFrom:)``).
  package func unwrap<T: Decodable>(
    _ value: JSONValue, as type: T.Type, parent: @autoclosure () -> CodingPathNode,
    step: @autoclosure () -> CodingPathStep, fallback: JSONObject? = nil
  ) throws -> T {
    if T.self == String.self { return try unboxString(value, parent: parent(), step: step()) as! T }
    if T.self == Int.self { return try unboxInt(value, parent: parent(), step: step()) as! T }
    if T.self == Double.self { return try unboxDouble(value, parent: parent(), step: step()) as! T }
    if T.self == Bool.self { return try unboxBool(value, parent: parent(), step: step()) as! T }
    if T.self == Date.self { return try unboxDate(value, parent: parent(), step: step()) as! T }
    if T.self == Data.self { return try unboxData(value, parent: parent(), step: step()) as! T }
    if T.self == URL.self { return try unboxURL(value, parent: parent(), step: step()) as! T }
    if T.self == Decimal.self { return try unboxDecimal(value, parent: parent(), step: step()) as! T }
    if case .array(let elements) = value {
      // Arrays skip the unkeyed container and the standard library's unspecialized
      // `Array.init(from:)`: the elements are decoded straight into the result.
      if T.self == [String].self {
        return try decodeStringArray(elements, at: parent().appending(step())) as! T
      }
      if let arrayType = T.self as? any DecodableArray.Type {
        return try arrayType.decode(elements, decoder: self, pathNode: parent().appending(step())) as! T
      }
    }
    if case .object(let object) = value {
      // `[String: Value]` skips the standard library's `Dictionary.init(from:)`, which went
      // through a keyed container, `allKeys` and dynamic casts: a fifth of all decoding time
      // for a config with a small `labels` dictionary per entry.
      if T.self == [String: String].self {
        return try decodeStringDictionary(object, at: parent().appending(step())) as! T
      }
      if isStringKeyedDictionary(T.self) {
        let dictionaryType = T.self as! any DecodableStringDictionary.Type
        return try dictionaryType.decode(
          object, decoder: self, pathNode: parent().appending(step()), fallback: fallback) as! T
      }
    }
    return try decodeNested(value, as: T.self, parent: parent(), step: step(), fallback: fallback) { try T(from: $0) }
  }

  /// `[String]` in specialized code. The array's own path node is made only for an error.
  private func decodeStringArray(_ elements: [JSONValue], at node: @autoclosure () -> CodingPathNode) throws -> [String] {
    var result: [String] = []
    result.reserveCapacity(elements.count)
    for index in elements.indices {
      guard case .string(let string) = elements[index] else {
        throw mismatch(String.self, elements[index], parent: node(), step: .index(index))
      }
      result.append(string)
    }
    return result
  }

  /// `[String: String]`, the common dictionary in settings, in specialized code. The
  /// dictionary's own path node is made only for an error.
  private func decodeStringDictionary(_ object: JSONObject, at node: @autoclosure () -> CodingPathNode) throws -> [String: String] {
    var result = [String: String](minimumCapacity: object.count)
    for member in object.members {
      guard case .string(let string) = member.value else {
        throw mismatch(String.self, member.value, parent: node(), step: .key(JSONCodingKey(stringValue: member.key)))
      }
      result[member.key] = string
    }
    return result
  }

  /// Which types are `[String: Value]` dictionaries, for every decode in the process.
  package static let stringKeyedDictionaryTypes = TypeConformanceCache { $0 is any DecodableStringDictionary.Type }

  /// Whether `type` is a `[String: Value]`. The conformance lookup behind `is` costs about
  /// as much as decoding a small value, so answers are remembered: for this call in a short
  /// list, for the process in ``stringKeyedDictionaryTypes``.
  private func isStringKeyedDictionary(_ type: Any.Type) -> Bool {
    state.recentTypes.answer(for: type, from: JSONValueDecoderImpl.stringKeyedDictionaryTypes)
  }

  /// The position of `key` in `object`: the member at ``keyHint`` when it is the one, else
  /// whatever `JSONObject.position(of:)` finds. Moves the hint past the member found.
  @inline(__always)
  package func position(of key: String, in object: JSONObject) -> Int? {
    let hint = keyHint
    if hint < object.members.count, object.members[hint].key.hasSameBytes(as: key) {
      keyHint = hint + 1
      return hint
    }
    guard let position = object.position(of: key) else { return nil }
    keyHint = position + 1
    return position
  }

  /// Runs `body` with this decoder moved to `value`, `step` below `parent` (its missing
  /// members from `fallback`), then restores it.
  package func decodeNested<Result>(
    _ value: consuming JSONValue, as type: Any.Type, parent: consuming CodingPathNode, step: consuming CodingPathStep,
    fallback: JSONObject? = nil, _ body: (JSONValueDecoderImpl) throws -> Result
  ) throws -> Result {
    let savedType = currentType
    let savedKeyHint = keyHint
    let savedFallback = self.fallback
    self.fallback = fallback
    // Swapped in and out, not copied: each copy is a retain and a release, and copying a step
    // copies its key through the key type's value witnesses.
    swap(&self.value, &value)
    swap(&parentNode, &parent)
    swap(&self.step, &step)
    currentType = type
    keyHint = 0
    defer {
      swap(&self.value, &value)
      swap(&parentNode, &parent)
      swap(&self.step, &step)
      currentType = savedType
      keyHint = savedKeyHint
      self.fallback = savedFallback
    }
    return try body(self)
  }

  /// Decodes each of `elements` with `body`, which gets the element and its path step.
  package func decodeElements<Element>(
    _ elements: [JSONValue], parent: CodingPathNode,
    _ body: (JSONValue, CodingPathStep) throws -> Element
  ) rethrows -> [Element] {
    var result: [Element] = []
    result.reserveCapacity(elements.count)
    for index in elements.indices {
      result.append(try body(elements[index], .index(index)))
    }
    return result
  }

  /// A new decoder for `value` at `step` below `parent`, for `superDecoder()`, which may
  /// outlive the call that creates it.
  package func makeSuperDecoder(
    _ value: JSONValue, parent: CodingPathNode, step: CodingPathStep, fallback: JSONObject? = nil
  ) -> any Decoder {
    let decoder = JSONValueDecoderImpl(state: state, value: value, parentNode: parent, step: step)
    decoder.fallback = fallback
    return decoder
  }
}

/// Dictionaries keyed by `String` decode their members directly (see
/// ``JSONValueDecoderImpl/unwrap(_:as:parent:step:fallback:)``), as the standard library
/// would: every member becomes an entry, and only the members: a `fallback` never adds an
/// entry, it only gives an entry's value its missing members.
package protocol DecodableStringDictionary {
  static func decode(
    _ object: JSONObject, decoder: JSONValueDecoderImpl, pathNode: CodingPathNode, fallback: JSONObject?
  ) throws -> Self
}

extension Dictionary: DecodableStringDictionary where Key == String, Value: Decodable {
  package static func decode(
    _ object: JSONObject, decoder: JSONValueDecoderImpl, pathNode: CodingPathNode, fallback: JSONObject?
  ) throws -> [String: Value] {
    var result = [String: Value](minimumCapacity: object.count)
    for member in object.members {
      result[member.key] = try decoder.unwrap(
        member.value, as: Value.self, parent: pathNode, step: .key(JSONCodingKey(stringValue: member.key)),
        fallback: fallback?[member.key]?.objectValue)
    }
    return result
  }
}

/// Arrays decode their elements directly (see ``JSONValueDecoderImpl/unwrap(_:as:parent:step:)``).
package protocol DecodableArray {
  static func decode(
    _ elements: [JSONValue], decoder: JSONValueDecoderImpl, pathNode: CodingPathNode
  ) throws -> Self
}

extension Array: DecodableArray where Element: Decodable {
  package static func decode(
    _ elements: [JSONValue], decoder: JSONValueDecoderImpl, pathNode: CodingPathNode
  ) throws -> [Element] {
    try decoder.decodeElements(elements, parent: pathNode) { value, step in
      try decoder.unwrap(value, as: Element.self, parent: pathNode, step: step)
    }
  }
}
