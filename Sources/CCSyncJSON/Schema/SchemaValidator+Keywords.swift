import CCSyncSystem

extension SchemaValidator {
  /// Applies one keyword of `node` to `instance`.
  mutating func apply(
    _ keyword: SchemaKeyword, of node: SchemaNode, to instance: JSONValue, _ local: inout SchemaEvaluated, collect: Bool
  ) -> Bool {
    switch keyword {
    case .ref(let target):
      return evaluate(target, instance, &local, collect: collect)
    case .dynamicRef(let target, let anchor):
      var destination = target
      if let anchor {
        for resource in scope {
          if let found = program.resources[resource].dynamicAnchors[anchor] {
            destination = found
            break
          }
        }
      }
      return evaluate(destination, instance, &local, collect: collect)
    case .contains(let target, let minimum, let maximum):
      return applyContains(target, minimum, maximum, of: node, to: instance, &local, collect: collect)
    case .allOf(let targets):
      return applyAllOf(targets, of: node, to: instance, &local, collect: collect)
    case .anyOf(let targets):
      return applyAnyOf(targets, of: node, to: instance, &local, collect: collect)
    case .oneOf(let targets):
      return applyOneOf(targets, of: node, to: instance, &local, collect: collect)
    case .not(let target):
      return applyNot(target, of: node, to: instance, &local, collect: collect)
    case .conditional(let condition, let then, let otherwise):
      return applyConditional(condition, then, otherwise, of: node, to: instance, &local, collect: collect)
    case .dependentSchemas(let pairs):
      return applyDependentSchemas(pairs, of: node, to: instance, &local, collect: collect)
    case .items(let prefix, let rest):
      return applyItems(prefix, rest, of: node, to: instance, &local, collect: collect)
    case .members(let members):
      return applyMembers(members, of: node, to: instance, &local, collect: collect)
    case .propertyNames(let target):
      return applyPropertyNames(target, of: node, to: instance, &local, collect: collect)
    case .unevaluatedItems(let target):
      return applyUnevaluatedItems(target, of: node, to: instance, &local, collect: collect)
    case .unevaluatedProperties(let target):
      return applyUnevaluatedProperties(target, of: node, to: instance, &local, collect: collect)
    default:
      return check(keyword, of: node, instance)
    }
  }

  /// Applies one keyword that asserts something of `instance` itself, with no subschema.
  @inline(never)
  mutating func check(_ keyword: SchemaKeyword, of node: SchemaNode, _ instance: JSONValue) -> Bool {
    switch keyword {
    case .type(let types):
      if SchemaValidator.matches(types, instance) { return true }
      record(node, "type", "\(SchemaMessages.show(instance)) is not \(types.phrase)")
      return false
    case .enumeration(let values):
      if values.contains(where: { SchemaEquality.equal($0, instance) }) { return true }
      record(node, "enum", "\(SchemaMessages.show(instance)) is not one of \(SchemaMessages.show(.array(values)))")
      return false
    case .constant(let value):
      if SchemaEquality.equal(instance, value) { return true }
      record(node, "const", "\(SchemaMessages.show(instance)) is not \(SchemaMessages.show(value))")
      return false
    case .multipleOf(let divisor):
      guard case .number(let number) = instance, !divisor.divides(number) else { return true }
      record(node, "multipleOf", "\(number) is not a multiple of \(divisor.number)")
      return false
    case .maximum(let limit):
      guard case .number(let number) = instance, limit.compare(number) > 0 else { return true }
      record(node, "maximum", "\(number) is greater than the maximum \(limit.number)")
      return false
    case .exclusiveMaximum(let limit):
      guard case .number(let number) = instance, limit.compare(number) >= 0 else { return true }
      record(node, "exclusiveMaximum", "\(number) is not less than \(limit.number)")
      return false
    case .minimum(let limit):
      guard case .number(let number) = instance, limit.compare(number) < 0 else { return true }
      record(node, "minimum", "\(number) is less than the minimum \(limit.number)")
      return false
    case .exclusiveMinimum(let limit):
      guard case .number(let number) = instance, limit.compare(number) <= 0 else { return true }
      record(node, "exclusiveMinimum", "\(number) is not greater than \(limit.number)")
      return false
    case .maxLength(let limit):
      guard case .string(let string) = instance, string.utf8.count > limit else { return true }
      let length = string.unicodeScalars.count
      guard length > limit else { return true }
      record(node, "maxLength", "\(SchemaMessages.show(string)) is longer than \(SchemaMessages.count(limit, "character"))")
      return false
    case .minLength(let limit):
      guard case .string(let string) = instance, string.unicodeScalars.count < limit else { return true }
      record(node, "minLength", "\(SchemaMessages.show(string)) is shorter than \(SchemaMessages.count(limit, "character"))")
      return false
    case .pattern(let pattern):
      guard case .string(let string) = instance, !pattern.matches(string) else { return true }
      record(node, "pattern", "\(SchemaMessages.show(string)) does not match the pattern \(pattern.source)")
      return false
    case .format(let format):
      guard case .string(let string) = instance, !format.accepts(string) else { return true }
      record(node, "format", "\(SchemaMessages.show(string)) is not a valid \(format.rawValue)")
      return false
    case .maxItems(let limit):
      guard case .array(let items) = instance, items.count > limit else { return true }
      record(node, "maxItems", "the array has \(SchemaMessages.count(items.count, "item")), more than \(limit)")
      return false
    case .minItems(let limit):
      guard case .array(let items) = instance, items.count < limit else { return true }
      record(node, "minItems", "the array has \(SchemaMessages.count(items.count, "item")), fewer than \(limit)")
      return false
    case .uniqueItems:
      guard case .array(let items) = instance, let (first, second) = SchemaValidator.duplicate(in: items) else { return true }
      record(node, "uniqueItems", "items \(first) and \(second) are equal (\(SchemaMessages.show(items[first])))")
      return false
    case .maxProperties(let limit):
      guard case .object(let object) = instance, object.count > limit else { return true }
      record(node, "maxProperties", "the object has \(SchemaMessages.count(object.count, "property")), more than \(limit)")
      return false
    case .minProperties(let limit):
      guard case .object(let object) = instance, object.count < limit else { return true }
      record(node, "minProperties", "the object has \(SchemaMessages.count(object.count, "property")), fewer than \(limit)")
      return false
    case .required(let keys):
      guard case .object(let object) = instance else { return true }
      var valid = true
      for key in keys where object.position(of: key) == nil {
        valid = false
        guard recording else { return false }
        record(node, "required", "required property \(SchemaMessages.show(key)) is missing")
      }
      return valid
    case .dependentRequired(let pairs):
      guard case .object(let object) = instance else { return true }
      var valid = true
      for (key, required) in pairs where object.position(of: key) != nil {
        for other in required where object.position(of: other) == nil {
          valid = false
          guard recording else { return false }
          record(node, "dependentRequired", "property \(SchemaMessages.show(other)) is required when \(SchemaMessages.show(key)) is present")
        }
      }
      return valid
    default:
      return true
    }
  }

  static func matches(_ types: SchemaTypes, _ instance: JSONValue) -> Bool {
    switch instance {
    case .null: return types.contains(.null)
    case .bool: return types.contains(.boolean)
    case .string: return types.contains(.string)
    case .array: return types.contains(.array)
    case .object: return types.contains(.object)
    case .number(let number):
      return types.contains(.number) || (types.contains(.integer) && number.isIntegral)
    }
  }

  /// The positions of the first two equal items, or `nil` when all differ.
  static func duplicate(in items: [JSONValue]) -> (Int, Int)? {
    if items.count <= 16 {
      for second in items.indices {
        for first in 0..<second where SchemaEquality.equal(items[first], items[second]) { return (first, second) }
      }
      return nil
    }
    var seen: [SchemaEquality.Key: Int] = [:]
    for (position, item) in items.enumerated() {
      if let first = seen[SchemaEquality.Key(value: item)] { return (first, position) }
      seen[SchemaEquality.Key(value: item)] = position
    }
    return nil
  }
}
