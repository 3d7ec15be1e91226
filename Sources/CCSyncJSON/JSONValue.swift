import CCSyncSystem

/// A JSON value that keeps everything its text said: object members keep their order and
/// numbers keep their exact text, so a document survives a parse and print unchanged.
///
/// Equality is by meaning, not by spelling: objects compare without regard to member order,
/// and numbers compare by numeric value (`1.50 == 1.5`). That is what lets a field-level diff
/// leave a value's original text alone when only its spelling would differ.
///
/// `JSONValue` is a value type and `Sendable`.
public enum JSONValue: Sendable, Hashable {
  case null
  case bool(Bool)
  case number(JSONNumber)
  case string(String)
  case array([JSONValue])
  case object(JSONObject)
}

extension JSONValue {
  /// The name of this value's kind, as error messages say it: `object`, `array`, `string`,
  /// `number`, `boolean` or `null`.
  public var kindName: String {
    switch self {
    case .null: return "null"
    case .bool: return "boolean"
    case .number: return "number"
    case .string: return "string"
    case .array: return "array"
    case .object: return "object"
    }
  }

  /// The members when this is an object, otherwise `nil`.
  public var objectValue: JSONObject? {
    if case .object(let object) = self { return object }
    return nil
  }

  /// The elements when this is an array, otherwise `nil`.
  public var arrayValue: [JSONValue]? {
    if case .array(let elements) = self { return elements }
    return nil
  }

  /// The string when this is a string, otherwise `nil`.
  public var stringValue: String? {
    if case .string(let string) = self { return string }
    return nil
  }

  /// The number when this is a number, otherwise `nil`.
  public var numberValue: JSONNumber? {
    if case .number(let number) = self { return number }
    return nil
  }

  /// The Boolean when this is `true` or `false`, otherwise `nil`.
  public var boolValue: Bool? {
    if case .bool(let bool) = self { return bool }
    return nil
  }

  /// Whether this is `null`.
  public var isNull: Bool {
    if case .null = self { return true }
    return false
  }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral,
  ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByStringLiteral,
  ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
  public init(nilLiteral: ()) { self = .null }
  public init(booleanLiteral value: Bool) { self = .bool(value) }
  public init(integerLiteral value: Int) { self = .number(JSONNumber(value)) }
  public init(floatLiteral value: Double) { self = .number(JSONNumber(value)) }
  public init(stringLiteral value: String) { self = .string(value) }
  public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
  public init(dictionaryLiteral elements: (String, JSONValue)...) {
    self = .object(JSONObject(elements))
  }
}
