import CCSyncSystem

/// One compiled schema: a boolean schema, or an object schema's keywords in the order they
/// are checked. Nodes refer to one another by their index in ``SchemaProgram/nodes``, so a
/// `$ref` cycle is just two indexes and every node is immutable. `Sendable`: all `let`.
final class SchemaNode: Sendable {
  /// `true` or `false` for a boolean schema; `nil` for an object schema.
  let constant: Bool?
  /// The keywords that assert or apply subschemas; `unevaluated*` come last, since they read
  /// what every other keyword evaluated.
  let keywords: [SchemaKeyword]
  /// Whether a keyword here needs the annotations of its siblings (`unevaluatedItems`,
  /// `unevaluatedProperties`).
  let collectsAnnotations: Bool
  /// The schema resource (`$id` scope) this node belongs to, an index in
  /// ``SchemaProgram/resources``: the dynamic scope of `$dynamicRef` is made of these.
  let resource: Int
  /// Where this schema is: `#/properties/a`, or `uri#/pointer` outside the root document.
  let location: String
  /// The types when `type` is the only keyword (`{"type": "string"}`, the commonest leaf),
  /// which the validator checks without entering the node.
  let onlyTypes: SchemaTypes?

  init(constant: Bool?, keywords: [SchemaKeyword], resource: Int, location: String) {
    self.constant = constant
    self.keywords = keywords
    self.collectsAnnotations = keywords.contains {
      switch $0 {
      case .unevaluatedItems, .unevaluatedProperties: return true
      default: return false
      }
    }
    self.resource = resource
    self.location = location
    if keywords.count == 1, case .type(let types) = keywords[0] { onlyTypes = types } else { onlyTypes = nil }
  }
}
