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
    case .contains(let target, let minimum, let maximum):
      guard case .array(let items) = instance else { return true }
      var matches = 0
      for (position, item) in items.enumerated() {
        var ignored = SchemaEvaluated()
        guard evaluateSilently(target, item, &ignored, collect: false) else { continue }
        matches += 1
        if collect { local.items.insert(position) } else if maximum == nil, matches >= minimum { return true }
      }
      if matches < minimum {
        record(node, "contains", minimum == 1
          ? "no item matches the contains schema"
          : "\(SchemaMessages.count(matches, "item")) match the contains schema, fewer than minContains \(minimum)")
        return false
      }
      if let maximum, matches > maximum {
        record(node, "maxContains", "\(SchemaMessages.count(matches, "item")) match the contains schema, more than maxContains \(maximum)")
        return false
      }
      return true
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
    case .allOf(let targets):
      var valid = true
      for target in targets where !evaluate(target, instance, &local, collect: collect) {
        valid = false
        if !recording { return false }
      }
      return valid
    case .anyOf(let targets):
      var matched = false
      for target in targets where evaluateSilently(target, instance, &local, collect: collect) {
        matched = true
        if !collect { break }
      }
      if !matched { record(node, "anyOf", "\(SchemaMessages.show(instance)) matches none of the \(targets.count) schemas in anyOf") }
      return matched
    case .oneOf(let targets):
      var matched: [Int] = []
      var branch = SchemaEvaluated()
      for (position, target) in targets.enumerated() {
        var candidate = SchemaEvaluated()
        guard evaluateSilently(target, instance, &candidate, collect: collect) else { continue }
        matched.append(position)
        branch = candidate
        if matched.count > 1 && !recording { return false }
      }
      if matched.count == 1 {
        if collect { local.merge(branch) }
        return true
      }
      record(node, "oneOf", matched.isEmpty
        ? "\(SchemaMessages.show(instance)) matches none of the \(targets.count) schemas in oneOf"
        : "\(SchemaMessages.show(instance)) matches schemas \(matched.map(String.init).joined(separator: ", ")) of oneOf; exactly one must match")
      return false
    case .not(let target):
      var ignored = SchemaEvaluated()
      guard evaluateSilently(target, instance, &ignored, collect: false) else { return true }
      record(node, "not", "\(SchemaMessages.show(instance)) matches the schema under not")
      return false
    case .conditional(let condition, let then, let otherwise):
      if evaluateSilently(condition, instance, &local, collect: collect) {
        guard let then else { return true }
        return evaluate(then, instance, &local, collect: collect)
      }
      guard let otherwise else { return true }
      return evaluate(otherwise, instance, &local, collect: collect)
    case .dependentSchemas(let pairs):
      guard case .object(let object) = instance else { return true }
      var valid = true
      for (key, target) in pairs where object.position(of: key) != nil {
        if !evaluate(target, instance, &local, collect: collect) {
          valid = false
          if !recording { return false }
        }
      }
      return valid
    case .items(let prefix, let rest):
      guard case .array(let items) = instance else { return true }
      var valid = true
      for (position, item) in items.enumerated() {
        let target: Int
        let name: String
        if position < prefix.count {
          target = prefix[position]
          name = "prefixItems"
        } else if let rest {
          target = rest
          name = "items"
        } else {
          break
        }
        if !evaluateChild(target, item, .index(position), node, name) {
          valid = false
          if !recording { return false }
        }
      }
      if collect {
        local.itemPrefix = max(local.itemPrefix, min(prefix.count, items.count))
        if rest != nil { local.allItems = true }
      }
      return valid
    case .members(let members):
      guard case .object(let object) = instance else { return true }
      var valid = true
      var hint = 0
      var requiredFound = 0
      for member in object {
        var matched = false
        if let position = members.entry(for: member.key, hint: &hint) {
          let entry = members.entries[position]
          if entry.isRequired { requiredFound += 1 }
          if let target = entry.node {
            matched = true
            if !evaluateChild(target, member.value, .key(member.key), node, "properties") {
              valid = false
              if !recording { return false }
            }
          }
        }
        for (pattern, target) in members.patterns where pattern.matches(member.key) {
          matched = true
          if !evaluateChild(target, member.value, .key(member.key), node, "patternProperties") {
            valid = false
            if !recording { return false }
          }
        }
        if !matched, let additional = members.additional {
          matched = true
          if !evaluateChild(additional, member.value, .key(member.key), node, "additionalProperties") {
            valid = false
            if !recording { return false }
          }
        }
        if matched && collect { local.properties.insert(ExactKey(member.key)) }
      }
      if requiredFound < members.required.count {
        valid = false
        for key in members.required where object.position(of: key) == nil {
          record(node, "required", "required property \(SchemaMessages.show(key)) is missing")
        }
      }
      return valid
    case .propertyNames(let target):
      guard case .object(let object) = instance else { return true }
      var valid = true
      for member in object {
        var ignored = SchemaEvaluated()
        guard !evaluateSilently(target, .string(member.key), &ignored, collect: false) else { continue }
        valid = false
        guard recording else { return false }
        record(node, "propertyNames", "property name \(SchemaMessages.show(member.key)) does not match the propertyNames schema")
      }
      return valid
    case .unevaluatedItems(let target):
      guard case .array(let items) = instance else { return true }
      var valid = true
      for (position, item) in items.enumerated() where !local.containsItem(position) {
        if !evaluateChild(target, item, .index(position), node, "unevaluatedItems") {
          valid = false
          if !recording { return false }
        }
      }
      local.allItems = true
      return valid
    case .unevaluatedProperties(let target):
      guard case .object(let object) = instance else { return true }
      var valid = true
      for member in object where !local.containsProperty(member.key) {
        if !evaluateChild(target, member.value, .key(member.key), node, "unevaluatedProperties") {
          valid = false
          if !recording { return false }
        }
      }
      local.allProperties = true
      return valid
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
