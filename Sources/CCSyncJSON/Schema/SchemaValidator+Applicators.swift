import CCSyncSystem

// The keywords that apply subschemas. Each is a function of its own, kept out of line, so
// that the recursion through them (one level of the instance costs `evaluate`, `apply`,
// one of these, `evaluateChild`) uses small stack frames: a 512-deep document must fit
// in a secondary thread's stack.
extension SchemaValidator {
  /// `contains` with `minContains` and `maxContains`: counts the items that match (all of
  /// them when annotations are collected, for `unevaluatedItems`).
  @inline(never)
  mutating func applyContains(
    _ target: Int, _ minimum: Int, _ maximum: Int?, of node: SchemaNode, to instance: JSONValue, _ local: inout SchemaEvaluated, collect: Bool
  ) -> Bool {
    guard case .array(let items) = instance else { return true }
    var matches = 0
    for (position, item) in items.enumerated() {
      var ignored = SchemaEvaluated()
      guard evaluateSilently(target, item, &ignored, collect: false) else { continue }
      matches += 1
      if collect { local.items.insert(position) } else if maximum == nil, matches >= minimum { return true }
    }
    if matches < minimum {
      record(node, minimum == 1 ? "contains" : "minContains", minimum == 1
        ? "no item matches the contains schema"
        : "\(SchemaMessages.count(matches, "item")) match the contains schema, fewer than minContains \(minimum)")
      return false
    }
    if let maximum, matches > maximum {
      record(node, "maxContains", "\(SchemaMessages.count(matches, "item")) match the contains schema, more than maxContains \(maximum)")
      return false
    }
    return true
  }

  /// `allOf`: every subschema; their failures are reported as they are.
  @inline(never)
  mutating func applyAllOf(
    _ targets: [Int], of node: SchemaNode, to instance: JSONValue, _ local: inout SchemaEvaluated, collect: Bool
  ) -> Bool {
    var valid = true
    for target in targets where !evaluate(target, instance, &local, collect: collect) {
      valid = false
      if !recording { return false }
    }
    return valid
  }

  /// `anyOf`: stops at the first match unless annotations are collected; one failure when
  /// none matches.
  @inline(never)
  mutating func applyAnyOf(
    _ targets: [Int], of node: SchemaNode, to instance: JSONValue, _ local: inout SchemaEvaluated, collect: Bool
  ) -> Bool {
    var matched = false
    for target in targets where evaluateSilently(target, instance, &local, collect: collect) {
      matched = true
      if !collect { break }
    }
    if !matched { record(node, "anyOf", "\(SchemaMessages.show(instance)) matches none of the \(targets.count) schemas in anyOf") }
    return matched
  }

  /// `oneOf`: exactly one subschema must match; only its annotations count.
  @inline(never)
  mutating func applyOneOf(
    _ targets: [Int], of node: SchemaNode, to instance: JSONValue, _ local: inout SchemaEvaluated, collect: Bool
  ) -> Bool {
    // Counts, not a list of the matches: no allocation per oneOf.
    var matches = 0
    var firstMatch = 0
    var secondMatch = 0
    var branch = SchemaEvaluated()
    for (position, target) in targets.enumerated() {
      var candidate = SchemaEvaluated()
      guard evaluateSilently(target, instance, &candidate, collect: collect) else { continue }
      matches += 1
      if matches == 1 { firstMatch = position } else if matches == 2 { secondMatch = position }
      branch = candidate
      if matches > 1 && !recording { return false }
    }
    if matches == 1 {
      if collect { local.merge(branch) }
      return true
    }
    record(node, "oneOf", matches == 0
      ? "\(SchemaMessages.show(instance)) matches none of the \(targets.count) schemas in oneOf"
      : "\(SchemaMessages.show(instance)) matches \(matches) of the schemas in oneOf (\(firstMatch) and \(secondMatch)\(matches > 2 ? ", ..." : "")); exactly one must")
    return false
  }

  /// `not`: the subschema must fail; it leaves no annotations.
  @inline(never)
  mutating func applyNot(
    _ target: Int, of node: SchemaNode, to instance: JSONValue, _ local: inout SchemaEvaluated, collect: Bool
  ) -> Bool {
    var ignored = SchemaEvaluated()
    guard evaluateSilently(target, instance, &ignored, collect: false) else { return true }
    record(node, "not", "\(SchemaMessages.show(instance)) matches the schema under not")
    return false
  }

  /// `if`, `then`, `else`: `if` is silent, its annotations count when it passes.
  @inline(never)
  mutating func applyConditional(
    _ condition: Int, _ then: Int?, _ otherwise: Int?, of node: SchemaNode, to instance: JSONValue, _ local: inout SchemaEvaluated, collect: Bool
  ) -> Bool {
    if evaluateSilently(condition, instance, &local, collect: collect) {
      guard let then else { return true }
      return evaluate(then, instance, &local, collect: collect)
    }
    guard let otherwise else { return true }
    return evaluate(otherwise, instance, &local, collect: collect)
  }

  /// `dependentSchemas`: the subschema of each member present.
  @inline(never)
  mutating func applyDependentSchemas(
    _ pairs: [(key: String, node: Int)], of node: SchemaNode, to instance: JSONValue, _ local: inout SchemaEvaluated, collect: Bool
  ) -> Bool {
    guard case .object(let object) = instance else { return true }
    var valid = true
    for (key, target) in pairs where object.position(of: key) != nil {
      if !evaluate(target, instance, &local, collect: collect) {
        valid = false
        if !recording { return false }
      }
    }
    return valid
  }

  /// `prefixItems` and `items`.
  @inline(never)
  mutating func applyItems(
    _ prefix: [Int], _ rest: Int?, of node: SchemaNode, to instance: JSONValue, _ local: inout SchemaEvaluated, collect: Bool
  ) -> Bool {
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
  }

  /// `properties`, `patternProperties`, `additionalProperties` and `required`, in one pass.
  @inline(never)
  mutating func applyMembers(
    _ members: SchemaMembers, of node: SchemaNode, to instance: JSONValue, _ local: inout SchemaEvaluated, collect: Bool
  ) -> Bool {
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
  }

  /// `propertyNames`: each member name, as a string, against the subschema.
  @inline(never)
  mutating func applyPropertyNames(
    _ target: Int, of node: SchemaNode, to instance: JSONValue, _ local: inout SchemaEvaluated, collect: Bool
  ) -> Bool {
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
  }

  /// `unevaluatedItems`: the items no other keyword here evaluated.
  @inline(never)
  mutating func applyUnevaluatedItems(
    _ target: Int, of node: SchemaNode, to instance: JSONValue, _ local: inout SchemaEvaluated, collect: Bool
  ) -> Bool {
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
  }

  /// `unevaluatedProperties`: the members no other keyword here evaluated.
  @inline(never)
  mutating func applyUnevaluatedProperties(
    _ target: Int, of node: SchemaNode, to instance: JSONValue, _ local: inout SchemaEvaluated, collect: Bool
  ) -> Bool {
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
