import CCSyncSystem

/// One compiled keyword (or a few that are checked together).
enum SchemaKeyword: Sendable {
  case ref(Int)
  /// `$dynamicRef`: the node the reference names, and the anchor name when that node has a
  /// `$dynamicAnchor` of that name (only then does the dynamic scope matter).
  case dynamicRef(Int, anchor: String?)
  case type(SchemaTypes)
  case enumeration([JSONValue])
  case constant(JSONValue)
  case multipleOf(SchemaDecimal)
  case maximum(SchemaDecimal)
  case exclusiveMaximum(SchemaDecimal)
  case minimum(SchemaDecimal)
  case exclusiveMinimum(SchemaDecimal)
  case maxLength(Int)
  case minLength(Int)
  case pattern(SchemaPattern)
  case format(SchemaFormat)
  case maxItems(Int)
  case minItems(Int)
  case uniqueItems
  /// `contains` with `minContains` (default 1) and `maxContains`.
  case contains(Int, minimum: Int, maximum: Int?)
  case maxProperties(Int)
  case minProperties(Int)
  case required([String])
  case dependentRequired([(key: String, required: [String])])
  case allOf([Int])
  case anyOf([Int])
  case oneOf([Int])
  case not(Int)
  case conditional(condition: Int, then: Int?, otherwise: Int?)
  case dependentSchemas([(key: String, node: Int)])
  /// `prefixItems` and `items`.
  case items(prefix: [Int], rest: Int?)
  case members(SchemaMembers)
  case propertyNames(Int)
  case unevaluatedItems(Int)
  case unevaluatedProperties(Int)

  /// The nodes applied to the same instance (for the cycle check).
  var inPlaceNodes: [Int] {
    switch self {
    case .ref(let node), .not(let node): return [node]
    case .dynamicRef(let node, _): return [node]
    case .allOf(let nodes), .anyOf(let nodes), .oneOf(let nodes): return nodes
    case .conditional(let condition, let then, let otherwise): return [condition] + [then, otherwise].compactMap { $0 }
    case .dependentSchemas(let pairs): return pairs.map(\.node)
    default: return []
    }
  }
}

/// The JSON types `type` names, as bits.
struct SchemaTypes: OptionSet, Sendable {
  let rawValue: UInt8
  static let null = SchemaTypes(rawValue: 1)
  static let boolean = SchemaTypes(rawValue: 2)
  static let object = SchemaTypes(rawValue: 4)
  static let array = SchemaTypes(rawValue: 8)
  static let number = SchemaTypes(rawValue: 16)
  static let string = SchemaTypes(rawValue: 32)
  static let integer = SchemaTypes(rawValue: 64)

  static let names: [(String, SchemaTypes)] = [
    ("null", .null), ("boolean", .boolean), ("object", .object), ("array", .array),
    ("number", .number), ("string", .string), ("integer", .integer),
  ]

  /// The names in the schema's words: `an integer`, `a string or null`.
  var phrase: String {
    let words = SchemaTypes.names.filter { contains($0.1) }.map { name, _ in
      name == "null" ? "null" : (name == "object" || name == "array" || name == "integer" ? "an " : "a ") + name
    }
    if words.count <= 1 { return words.first ?? "nothing" }
    return words.dropLast().joined(separator: ", ") + " or " + words.last!
  }
}
