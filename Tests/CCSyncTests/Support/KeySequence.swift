import CCSyncJSON

/// Encodes the given keys in order, each with its position as the value (a key given twice is
/// encoded twice).
struct KeySequence: Encodable {
  var keys: [String]
  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: JSONCodingKey.self)
    for (position, key) in keys.enumerated() {
      try container.encode(position, forKey: JSONCodingKey(stringValue: key))
    }
  }
}
