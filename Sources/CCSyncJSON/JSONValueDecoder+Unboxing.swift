import CCSyncSystem
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Reading leaf values, and the errors that name what was expected and what was found.
extension JSONValueDecoderImpl {
  package func unboxBool(_ value: JSONValue, parent: @autoclosure () -> CodingPathNode, step: @autoclosure () -> CodingPathStep) throws -> Bool {
    if case .bool(let bool) = value { return bool }
    throw mismatch(Bool.self, value, parent: parent(), step: step())
  }

  package func unboxString(_ value: JSONValue, parent: @autoclosure () -> CodingPathNode, step: @autoclosure () -> CodingPathStep) throws -> String {
    if case .string(let string) = value { return string }
    throw mismatch(String.self, value, parent: parent(), step: step())
  }

  /// An `Int`: the common case, parsed by non-generic code (the generic path below is not
  /// specialized for every width and is several times slower).
  package func unboxInt(_ value: JSONValue, parent: @autoclosure () -> CodingPathNode, step: @autoclosure () -> CodingPathStep) throws -> Int {
    if case .number(let number) = value, let integer = number.plainInt64Value.flatMap({ Int(exactly: $0) }) {
      return integer
    }
    return try unboxInteger(value, as: Int.self, parent: parent(), step: step())
  }

  /// An integer of type `Integer`: the number must be an exact integer in its range, in any
  /// spelling (`1000`, `1e3`, `1000.0`).
  ///
  /// Always inlined, so the common case (a plain integer that fits in 64 bits) is specialized
  /// for the caller's concrete type: left generic, `Integer(exactly:)` looked up tuple and
  /// optional metadata on every call, about 1000 instructions per `UInt32` or `UInt64`.
  @inline(__always)
  package func unboxInteger<Integer: FixedWidthInteger>(
    _ value: JSONValue, as type: Integer.Type, parent: @autoclosure () -> CodingPathNode, step: @autoclosure () -> CodingPathStep
  ) throws -> Integer {
    if case .number(let number) = value {
      if let plain = number.plainInt64Value, let integer = Integer(exactly: plain) { return integer }
      if !Integer.isSigned, let plain = number.plainUInt64Value, let integer = Integer(exactly: plain) {
        return integer
      }
    }
    return try unboxIntegerSlowly(value, as: type, parent: parent(), step: step())
  }

  /// ``unboxInteger(_:as:parent:step:)`` for everything but a plain integer that fits.
  @inline(never)
  private func unboxIntegerSlowly<Integer: FixedWidthInteger>(
    _ value: JSONValue, as type: Integer.Type, parent: @autoclosure () -> CodingPathNode, step: @autoclosure () -> CodingPathStep
  ) throws -> Integer {
    guard case .number(let number) = value else {
      throw mismatch(Integer.self, value, parent: parent(), step: step())
    }
    // Plain integers (no fraction, no exponent) that fit in 64 bits, without generic parsing.
    if let plain = number.plainInt64Value, let integer = Integer(exactly: plain) { return integer }
    if let plain = number.plainUInt64Value, let integer = Integer(exactly: plain) { return integer }
    if let integer = Integer(number.text) { return integer }
    let parts = DecimalParts(number.text)
    if parts.exponent < 0 {
      throw corrupted(parent: parent(), step: step(), "number \(number.text) is not an integer (expected \(Integer.self))")
    }
    func outOfRange() -> DecodingError {
      corrupted(parent: parent(), step: step(), "number \(number.text) does not fit in \(Integer.self)")
    }
    // 39 digits cover UInt128; anything longer overflows, and a huge exponent must not loop.
    guard parts.digits.count + parts.exponent <= 40 else { throw outOfRange() }
    var result: Integer = 0
    for position in 0..<(parts.digits.count + parts.exponent) {
      let digit = position < parts.digits.count ? Integer(parts.digits[position] &- UInt8(ascii: "0")) : 0
      let (shifted, overflow) = result.multipliedReportingOverflow(by: 10)
      let (next, carry) =
        parts.negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
      if overflow || carry { throw outOfRange() }
      result = next
    }
    return result
  }

  package func unboxDouble(_ value: JSONValue, parent: @autoclosure () -> CodingPathNode, step: @autoclosure () -> CodingPathStep) throws -> Double {
    if case .number(let number) = value {
      if let double = number.exactDoubleValue ?? Double(number.text), double.isFinite { return double }
      throw corrupted(parent: parent(), step: step(), "number \(number.text) does not fit in Double")
    }
    if let special = nonConformingFloat(value) { return special }
    throw mismatch(Double.self, value, parent: parent(), step: step())
  }

  package func unboxFloat(_ value: JSONValue, parent: @autoclosure () -> CodingPathNode, step: @autoclosure () -> CodingPathStep) throws -> Float {
    if case .number(let number) = value {
      // Straight from the text: going through Double would round twice.
      if let float = Float(number.text), float.isFinite { return float }
      throw corrupted(parent: parent(), step: step(), "number \(number.text) does not fit in Float")
    }
    if let special = nonConformingFloat(value) { return Float(special) }
    throw mismatch(Float.self, value, parent: parent(), step: step())
  }

  private func nonConformingFloat(_ value: JSONValue) -> Double? {
    guard case .string(let string) = value,
      case .convertFromString(let positiveInfinity, let negativeInfinity, let nan) =
        state.options.nonConformingFloatDecodingStrategy
    else { return nil }
    switch string {
    case positiveInfinity: return .infinity
    case negativeInfinity: return -.infinity
    case nan: return .nan
    default: return nil
    }
  }

  package func unboxDate(_ value: JSONValue, parent: @autoclosure () -> CodingPathNode, step: @autoclosure () -> CodingPathStep) throws -> Date {
    switch state.options.dateDecodingStrategy {
    case .iso8601:
      guard case .string(let string) = value else {
        throw mismatch(Date.self, value, parent: parent(), step: step(), expected: "Date (an ISO 8601 string)")
      }
      guard let date = ISO8601Timestamp.date(from: string) else {
        throw corrupted(
          parent: parent(), step: step(),
          "expected an ISO 8601 date like 2026-11-29T21:05:24Z, found \(describeForError(value))")
      }
      return date
    case .secondsSince1970:
      return Date(timeIntervalSince1970: try unboxDouble(value, parent: parent(), step: step()))
    case .millisecondsSince1970:
      return Date(timeIntervalSince1970: try unboxDouble(value, parent: parent(), step: step()) / 1000)
    case .deferredToDate:
      return try decodeNested(value, as: Date.self, parent: parent(), step: step()) { try Date(from: $0) }
    case .custom(let closure):
      return try decodeNested(value, as: Date.self, parent: parent(), step: step()) { try closure($0) }
    }
  }

  package func unboxData(_ value: JSONValue, parent: @autoclosure () -> CodingPathNode, step: @autoclosure () -> CodingPathStep) throws -> Data {
    switch state.options.dataDecodingStrategy {
    case .base64:
      guard case .string(let string) = value else {
        throw mismatch(Data.self, value, parent: parent(), step: step(), expected: "Data (a base64 string)")
      }
      guard let data = Data(base64Encoded: string) else {
        throw corrupted(parent: parent(), step: step(), "expected base64 data, found \(describeForError(value))")
      }
      return data
    case .deferredToData:
      return try decodeNested(value, as: Data.self, parent: parent(), step: step()) { try Data(from: $0) }
    case .custom(let closure):
      return try decodeNested(value, as: Data.self, parent: parent(), step: step()) { try closure($0) }
    }
  }

  package func unboxDecimal(_ value: JSONValue, parent: @autoclosure () -> CodingPathNode, step: @autoclosure () -> CodingPathStep) throws -> Decimal {
    guard case .number(let number) = value else {
      throw mismatch(Decimal.self, value, parent: parent(), step: step(), expected: "Decimal (a number)")
    }
    guard let decimal = Decimal(string: number.text), !decimal.isNaN else {
      throw corrupted(parent: parent(), step: step(), "number \(number.text) does not fit in Decimal")
    }
    return decimal
  }

  package func unboxURL(_ value: JSONValue, parent: @autoclosure () -> CodingPathNode, step: @autoclosure () -> CodingPathStep) throws -> URL {
    guard case .string(let string) = value else {
      throw mismatch(URL.self, value, parent: parent(), step: step(), expected: "URL (a string)")
    }
    guard let url = URL(string: string) else {
      throw corrupted(parent: parent(), step: step(), "expected a URL, found \(describeForError(value))")
    }
    return url
  }

  /// `valueNotFound` for `null`, `typeMismatch` for anything else, with a description like
  /// `expected Int, found string "80"`.
  package func mismatch(
    _ type: Any.Type, _ value: JSONValue, parent: @autoclosure () -> CodingPathNode, step: @autoclosure () -> CodingPathStep,
    expected: String? = nil
  ) -> DecodingError {
    let context = DecodingError.Context(
      codingPath: parent().path(appending: step()),
      debugDescription: "expected \(expected ?? "\(type)"), found \(describeForError(value))")
    return value.isNull ? .valueNotFound(type, context) : .typeMismatch(type, context)
  }

  package func corrupted(parent: @autoclosure () -> CodingPathNode, step: @autoclosure () -> CodingPathStep, _ message: String) -> DecodingError {
    .dataCorrupted(DecodingError.Context(codingPath: parent().path(appending: step()), debugDescription: message))
  }
}
