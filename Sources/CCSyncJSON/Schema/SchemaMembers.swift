import CCSyncSystem

/// The keywords about an object's members, applied in one pass over them: `properties`,
/// `patternProperties`, `additionalProperties` and, when the same schema has them,
/// `required`. One pass finds each member's property schema and counts the required members
/// present, instead of one search of the object per required name.
///
/// A class, so that the validator's copy of the keyword is one reference count, not five.
/// `Sendable`: every stored property is a `let` of `Sendable` type.
final class SchemaMembers: Sendable {
  /// A name the schema knows: its `properties` subschema, if any, and whether it is required.
  struct Entry: Sendable {
    var key: String
    var node: Int?
    var isRequired: Bool
  }

  /// The `properties` names in schema order, then required names that have no subschema.
  let entries: [Entry]
  /// Name to entry when there are many; otherwise `entries` is scanned.
  private let lookup: [ExactKey: Int]?
  let patterns: [(pattern: SchemaPattern, node: Int)]
  let additional: Int?
  /// The `required` names in schema order (for messages); empty when none.
  let required: [String]

  init(properties: [(key: String, node: Int)], patterns: [(pattern: SchemaPattern, node: Int)], additional: Int?, required: [String]) {
    var entries = properties.map { Entry(key: $0.key, node: $0.node, isRequired: false) }
    for name in required {
      if let position = entries.firstIndex(where: { $0.key.hasSameBytes(as: name) }) {
        entries[position].isRequired = true
      } else {
        entries.append(Entry(key: name, node: nil, isRequired: true))
      }
    }
    if entries.count > 8 {
      var table: [ExactKey: Int] = [:]
      for (position, entry) in entries.enumerated() { table[ExactKey(entry.key)] = position }
      lookup = table
    } else {
      lookup = nil
    }
    self.entries = entries
    self.patterns = patterns
    self.additional = additional
    self.required = required
  }

  /// The entry for `key`. `hint` is where the next member's entry probably is: members
  /// usually come in the schema's order, so the first guess is one comparison.
  @inline(__always)
  func entry(for key: String, hint: inout Int) -> Int? {
    if hint < entries.count, entries[hint].key.hasSameBytes(as: key) {
      hint += 1
      return hint - 1
    }
    let found: Int?
    if let lookup {
      found = lookup[ExactKey(key)]
    } else {
      found = entries.firstIndex { $0.key.hasSameBytes(as: key) }
    }
    if let found { hint = found + 1 }
    return found
  }
}
