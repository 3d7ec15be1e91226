import CCSyncSystem

/// Equality as JSON Schema means it for `const`, `enum` and `uniqueItems`: numbers by
/// mathematical value (`1 == 1.0`), strings and object keys by their exact code points.
/// (``JSONValue``'s own `==` compares strings as Swift does, taking canonically equivalent
/// spellings, such as `é` and `e` plus a combining accent, for one; the schema does not.)
enum SchemaEquality {
  static func equal(_ left: JSONValue, _ right: JSONValue) -> Bool {
    switch (left, right) {
    case (.null, .null): return true
    case (.bool(let a), .bool(let b)): return a == b
    case (.number(let a), .number(let b)): return a == b
    case (.string(let a), .string(let b)): return a.hasSameBytes(as: b)
    case (.array(let a), .array(let b)):
      return a.count == b.count && zip(a, b).allSatisfy { equal($0, $1) }
    case (.object(let a), .object(let b)):
      guard a.count == b.count else { return false }
      for member in a {
        guard let position = b.position(of: member.key), equal(member.value, b[position].value) else { return false }
      }
      return true
    default:
      return false
    }
  }

  /// A value hashed as ``JSONValue`` hashes (equal by ``equal(_:_:)`` implies equal by
  /// `JSONValue.==`, so the hashes agree) and compared by ``equal(_:_:)``.
  struct Key: Hashable {
    let value: JSONValue
    func hash(into hasher: inout Hasher) { hasher.combine(value) }
    static func == (lhs: Key, rhs: Key) -> Bool { SchemaEquality.equal(lhs.value, rhs.value) }
  }
}
