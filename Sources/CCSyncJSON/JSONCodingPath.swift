import CCSyncSystem

/// A coding key the encoder and decoder make up themselves: an array position
/// (`Index 3`, integer value 3, as Foundation spells it) or the `super` key.
package struct JSONCodingKey: CodingKey, Sendable {
  package let stringValue: String
  package let intValue: Int?

  package init(stringValue: String) {
    self.stringValue = stringValue
    self.intValue = nil
  }

  package init(intValue: Int) {
    self.stringValue = "Index \(intValue)"
    self.intValue = intValue
  }

  /// The key `superEncoder()` and `superDecoder()` use.
  package static let superKey = JSONCodingKey(stringValue: "super")
}

/// One step down from a container: to a keyed member, to an array element, or nowhere (a
/// single-value container hands its value on at the same path).
package enum CodingPathStep {
  case none
  case key(any CodingKey)
  case index(Int)
}

/// A coding path as a linked list from the innermost key outwards. Encoders and decoders
/// share their parents' nodes, so going one level down costs one small allocation and no
/// array copy; the `[CodingKey]` array is built only when someone asks (an error, or a type
/// that reads `codingPath`).
package indirect enum CodingPathNode {
  case root
  case key(any CodingKey, parent: CodingPathNode)
  case index(Int, parent: CodingPathNode)

  package func appending(_ step: CodingPathStep) -> CodingPathNode {
    switch step {
    case .none: return self
    case .key(let key): return .key(key, parent: self)
    case .index(let index): return .index(index, parent: self)
    }
  }

  package func appending(_ key: any CodingKey) -> CodingPathNode {
    .key(key, parent: self)
  }

  /// The path from the root down to this node.
  package var path: [any CodingKey] {
    var keys: [any CodingKey] = []
    var node = self
    while true {
      switch node {
      case .root:
        return keys.reversed()
      case .key(let key, let parent):
        keys.append(key)
        node = parent
      case .index(let index, let parent):
        keys.append(JSONCodingKey(intValue: index))
        node = parent
      }
    }
  }

  /// The path from the root down to this node and one step further.
  package func path(appending step: CodingPathStep) -> [any CodingKey] {
    appending(step).path
  }
}

/// Renders a coding path for people: keys joined by dots, array positions as plain numbers
/// (`servers.1.port`), keys that would be ambiguous in that notation quoted
/// (`labels."app.kubernetes.io/name"`). The empty path renders as the empty string.
package func readableCodingPath(_ path: [any CodingKey]) -> String {
  var text = ""
  for key in path {
    if !text.isEmpty { text += "." }
    if let index = key.intValue,
      key.stringValue == "Index \(index)" || key.stringValue == String(index)
    {
      text += String(index)
    } else if key.stringValue.isEmpty
      || key.stringValue.utf8.contains(where: { byte in
        byte == UInt8(ascii: ".") || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: " ")
          || byte < 0x20
      })
    {
      text += key.stringValue.debugDescription
    } else {
      text += key.stringValue
    }
  }
  return text
}

/// How an error message names a JSON value: `string "80"`, `number 1.5`, `boolean true`,
/// `null`, `array`, `object`. Long strings are cut short.
package func describeForError(_ value: JSONValue) -> String {
  switch value {
  case .null: return "null"
  case .bool(let bool): return "boolean \(bool)"
  case .number(let number): return "number \(number.text)"
  case .string(let string):
    if string.count > 40 { return "string \((String(string.prefix(40)) + "…").debugDescription)" }
    return "string \(string.debugDescription)"
  case .array(let elements): return "array of \(elements.count) elements"
  case .object: return "object"
  }
}

extension DecodingError {
  /// The error as one line, coding path first:
  /// `server.port: expected Int, found string "80"`,
  /// `servers.1.host: missing key 'host'`, `theme: expected String, found null`.
  ///
  /// Works for any `DecodingError`; errors from ``JSONValueDecoder`` read best because their
  /// debug descriptions are written for this line. An underlying error, when there is one,
  /// follows in parentheses.
  public var readableDescription: String {
    switch self {
    case .typeMismatch(let type, let context):
      return Self.line(context.codingPath, context, fallback: "expected \(type)")
    case .valueNotFound(let type, let context):
      return Self.line(context.codingPath, context, fallback: "expected \(type), found null")
    case .keyNotFound(let key, let context):
      return Self.line(
        context.codingPath + [key], nil, fallback: "missing key '\(key.stringValue)'")
    case .dataCorrupted(let context):
      return Self.line(context.codingPath, context, fallback: "data corrupted")
    @unknown default:
      return String(describing: self)
    }
  }

  private static func line(_ path: [any CodingKey], _ context: Context?, fallback: String)
    -> String
  {
    let message = context?.debugDescription ?? ""
    return readableLine(path, message.isEmpty ? fallback : message, underlying: context?.underlyingError)
  }
}

extension EncodingError {
  /// The error as one line, coding path first:
  /// `limits.ratio: Double.infinity has no JSON spelling`.
  public var readableDescription: String {
    switch self {
    case .invalidValue(_, let context):
      return readableLine(context.codingPath, context.debugDescription, underlying: context.underlyingError)
    @unknown default:
      return String(describing: self)
    }
  }
}

/// `path: message (underlying)`, or the message alone at the top level.
private func readableLine(_ path: [any CodingKey], _ message: String, underlying: (any Error)?) -> String {
  let text = underlying.map { message + " (\($0))" } ?? message
  let location = readableCodingPath(path)
  return location.isEmpty ? text : location + ": " + text
}
