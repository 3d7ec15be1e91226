import CCSyncSystem

extension SchemaCompiler {
  /// Compiles the schema at `location`: checks each keyword's value and links subschemas.
  func compileNode(at location: SchemaLocation) throws(JSONSchemaError) -> SchemaNode {
    guard let value = value(at: location) else { throw error(location, "no schema here") }
    let (base, resource) = try scope(at: location)
    let where_ = describe(location)
    switch value {
    case .bool(let constant):
      return SchemaNode(constant: constant, keywords: [], resource: resource, location: where_)
    case .object(let object):
      let vocabulary = vocabularies[location.document] ?? .all
      var builder = KeywordBuilder(compiler: self, object: object, location: location, base: base)
      try builder.compileCore()
      if vocabulary.validation { try builder.compileValidation() }
      if vocabulary.applicator { try builder.compileApplicators() }
      try builder.compileFormat(asserting: assertFormats || vocabulary.formatAssertion)
      if vocabulary.unevaluated { try builder.compileUnevaluated() }
      return SchemaNode(constant: nil, keywords: builder.keywords, resource: resource, location: where_)
    default:
      throw error(location, "a schema must be an object or a boolean, not \(value.kindName) \(SchemaMessages.show(value))")
    }
  }
}

/// Compiles one object schema's keywords, in checking order: cheap assertions first,
/// `unevaluated*` last.
struct KeywordBuilder {
  let compiler: SchemaCompiler
  let object: JSONObject
  let location: SchemaLocation
  let base: String
  var keywords: [SchemaKeyword] = []

  init(compiler: SchemaCompiler, object: JSONObject, location: SchemaLocation, base: String) {
    self.compiler = compiler
    self.object = object
    self.location = location
    self.base = base
  }

  func fail(_ keyword: String, _ message: String) -> JSONSchemaError {
    compiler.error(location.appending(keyword), message)
  }

  func subschema(_ tokens: String...) -> Int {
    var target = location
    for token in tokens { target = target.appending(token) }
    return compiler.node(at: target)
  }

  /// A member that must be a schema (object or boolean).
  func schema(_ keyword: String) throws(JSONSchemaError) -> Int? {
    guard let value = object[keyword] else { return nil }
    switch value {
    case .object, .bool: return subschema(keyword)
    default: throw fail(keyword, "\(keyword) must be a schema (an object or a boolean), not \(value.kindName)")
    }
  }

  /// A member that must be a non-empty array of schemas.
  func schemaArray(_ keyword: String, allowEmpty: Bool = false) throws(JSONSchemaError) -> [Int]? {
    guard let value = object[keyword] else { return nil }
    guard case .array(let elements) = value, allowEmpty || !elements.isEmpty else {
      throw fail(keyword, "\(keyword) must be a non-empty array of schemas, not \(SchemaMessages.show(value))")
    }
    var result: [Int] = []
    for (position, element) in elements.enumerated() {
      switch element {
      case .object, .bool: result.append(subschema(keyword, String(position)))
      default: throw compiler.error(location.appending(keyword).appending(String(position)), "\(keyword) items must be schemas, not \(element.kindName)")
      }
    }
    return result
  }

  /// A member that must be an object whose values are schemas.
  func schemaMap(_ keyword: String) throws(JSONSchemaError) -> [(key: String, node: Int)]? {
    guard let value = object[keyword] else { return nil }
    guard case .object(let members) = value else { throw fail(keyword, "\(keyword) must be an object of schemas, not \(value.kindName)") }
    var result: [(key: String, node: Int)] = []
    for member in members {
      switch member.value {
      case .object, .bool: result.append((member.key, subschema(keyword, member.key)))
      default: throw compiler.error(location.appending(keyword).appending(member.key), "\(keyword) values must be schemas, not \(member.value.kindName)")
      }
    }
    return result
  }

  func count(_ keyword: String) throws(JSONSchemaError) -> Int? {
    guard let value = object[keyword] else { return nil }
    guard case .number(let number) = value, number.isIntegral, let integer = number.int64Value, integer >= 0 else {
      throw fail(keyword, "\(keyword) must be a non-negative integer, not \(SchemaMessages.show(value))")
    }
    return Int(integer)
  }

  func number(_ keyword: String) throws(JSONSchemaError) -> SchemaDecimal? {
    guard let value = object[keyword] else { return nil }
    guard case .number(let number) = value else { throw fail(keyword, "\(keyword) must be a number, not \(SchemaMessages.show(value))") }
    return SchemaDecimal(number)
  }

  func strings(_ value: JSONValue, _ keyword: String) throws(JSONSchemaError) -> [String] {
    guard case .array(let elements) = value else { throw fail(keyword, "\(keyword) must be an array of strings, not \(value.kindName)") }
    var result: [String] = []
    for element in elements {
      guard case .string(let string) = element else { throw fail(keyword, "\(keyword) must hold strings only, not \(SchemaMessages.show(element))") }
      guard !result.contains(string) else { throw fail(keyword, "\(keyword) lists \"\(string)\" twice") }
      result.append(string)
    }
    return result
  }

  func pattern(_ source: String, _ keywordLocation: SchemaLocation) throws(JSONSchemaError) -> SchemaPattern {
    do {
      return try SchemaPattern(source)
    } catch {
      throw compiler.error(keywordLocation, "\"\(source)\" is not a valid regular expression: \(error)")
    }
  }

  mutating func compileCore() throws(JSONSchemaError) {
    if let value = object["$ref"] {
      guard case .string(let reference) = value else { throw fail("$ref", "$ref must be a string, not \(value.kindName)") }
      let target = try compiler.resolveReference(reference, base: base, from: location.appending("$ref"))
      keywords.append(.ref(compiler.node(at: target)))
    }
    if let value = object["$dynamicRef"] {
      guard case .string(let reference) = value else { throw fail("$dynamicRef", "$dynamicRef must be a string, not \(value.kindName)") }
      let target = try compiler.resolveReference(reference, base: base, from: location.appending("$dynamicRef"))
      let fragment = SchemaURI.splitFragment(reference).fragment
      // Only a plain-name fragment naming a $dynamicAnchor opens the dynamic scope.
      let anchor = compiler.dynamicAnchorAt[target.key] == fragment ? fragment : nil
      keywords.append(.dynamicRef(compiler.node(at: target), anchor: anchor))
    }
    if let value = object["$defs"] {
      guard case .object = value else { throw fail("$defs", "$defs must be an object of schemas, not \(value.kindName)") }
      _ = try schemaMap("$defs")
    }
  }

  mutating func compileValidation() throws(JSONSchemaError) {
    if let value = object["type"] {
      var types: SchemaTypes = []
      let names: [JSONValue]
      if case .array(let elements) = value { names = elements } else { names = [value] }
      for name in names {
        guard case .string(let text) = name, let type = SchemaTypes.names.first(where: { $0.0 == text })?.1 else {
          throw fail("type", "\(SchemaMessages.show(name)) is not a JSON type name (null, boolean, object, array, number, string, integer)")
        }
        types.insert(type)
      }
      keywords.append(.type(types))
    }
    if let value = object["enum"] {
      guard case .array(let elements) = value else { throw fail("enum", "enum must be an array, not \(value.kindName)") }
      keywords.append(.enumeration(elements))
    }
    if let value = object["const"] { keywords.append(.constant(value)) }
    if let divisor = try number("multipleOf") {
      guard divisor.isPositive else { throw fail("multipleOf", "multipleOf must be greater than 0, not \(divisor.number)") }
      keywords.append(.multipleOf(divisor))
    }
    if let limit = try number("maximum") { keywords.append(.maximum(limit)) }
    if let limit = try number("exclusiveMaximum") { keywords.append(.exclusiveMaximum(limit)) }
    if let limit = try number("minimum") { keywords.append(.minimum(limit)) }
    if let limit = try number("exclusiveMinimum") { keywords.append(.exclusiveMinimum(limit)) }
    if let limit = try count("maxLength") { keywords.append(.maxLength(limit)) }
    if let limit = try count("minLength") { keywords.append(.minLength(limit)) }
    if let value = object["pattern"] {
      guard case .string(let source) = value else { throw fail("pattern", "pattern must be a string, not \(value.kindName)") }
      keywords.append(.pattern(try pattern(source, location.appending("pattern"))))
    }
    if let limit = try count("maxItems") { keywords.append(.maxItems(limit)) }
    if let limit = try count("minItems") { keywords.append(.minItems(limit)) }
    if let value = object["uniqueItems"] {
      guard case .bool(let unique) = value else { throw fail("uniqueItems", "uniqueItems must be a boolean, not \(value.kindName)") }
      if unique { keywords.append(.uniqueItems) }
    }
    if let limit = try count("maxProperties") { keywords.append(.maxProperties(limit)) }
    if let limit = try count("minProperties") { keywords.append(.minProperties(limit)) }
    if let value = object["required"] { keywords.append(.required(try strings(value, "required"))) }
    if let value = object["dependentRequired"] {
      guard case .object(let members) = value else { throw fail("dependentRequired", "dependentRequired must be an object, not \(value.kindName)") }
      var pairs: [(key: String, required: [String])] = []
      for member in members { pairs.append((member.key, try strings(member.value, "dependentRequired"))) }
      keywords.append(.dependentRequired(pairs))
    }
  }

  mutating func compileApplicators() throws(JSONSchemaError) {
    if let nodes = try schemaArray("allOf") { keywords.append(.allOf(nodes)) }
    if let nodes = try schemaArray("anyOf") { keywords.append(.anyOf(nodes)) }
    if let nodes = try schemaArray("oneOf") { keywords.append(.oneOf(nodes)) }
    if let node = try schema("not") { keywords.append(.not(node)) }
    let then = try schema("then")
    let otherwise = try schema("else")
    if let condition = try schema("if") { keywords.append(.conditional(condition: condition, then: then, otherwise: otherwise)) }
    if let pairs = try schemaMap("dependentSchemas") { keywords.append(.dependentSchemas(pairs)) }
    let prefix = try schemaArray("prefixItems")
    if let value = object["items"], case .array = value {
      throw fail("items", "items must be one schema in draft 2020-12 (an array of schemas is prefixItems)")
    }
    let rest = try schema("items")
    if prefix != nil || rest != nil { keywords.append(.items(prefix: prefix ?? [], rest: rest)) }
    let maximumContains = try count("maxContains")
    let minimumContains = try count("minContains")
    if let node = try schema("contains") {
      keywords.append(.contains(node, minimum: minimumContains ?? 1, maximum: maximumContains))
    }
    let properties = try schemaMap("properties")
    var patterns: [(pattern: SchemaPattern, node: Int)] = []
    for (source, node) in try schemaMap("patternProperties") ?? [] {
      patterns.append((try pattern(source, location.appending("patternProperties").appending(source)), node))
    }
    let additional = try schema("additionalProperties")
    // `required` joins the member pass when there is one (or starts it for a large list).
    let requiredPosition = keywords.firstIndex { if case .required = $0 { return true } else { return false } }
    var requiredNames: [String]?
    if let requiredPosition, case .required(let names) = keywords[requiredPosition] { requiredNames = names }
    if properties != nil || !patterns.isEmpty || additional != nil || (requiredNames?.count ?? 0) > 4 {
      if let requiredPosition { keywords.remove(at: requiredPosition) }
      keywords.append(.members(SchemaMembers(
        properties: properties ?? [], patterns: patterns, additional: additional, required: requiredNames ?? [])))
    }
    if let node = try schema("propertyNames") { keywords.append(.propertyNames(node)) }
  }

  mutating func compileFormat(asserting: Bool) throws(JSONSchemaError) {
    guard let value = object["format"] else { return }
    guard case .string(let name) = value else { throw fail("format", "format must be a string, not \(value.kindName)") }
    if asserting, let format = SchemaFormat(rawValue: name) { keywords.append(.format(format)) }
  }

  mutating func compileUnevaluated() throws(JSONSchemaError) {
    if let node = try schema("unevaluatedItems") { keywords.append(.unevaluatedItems(node)) }
    if let node = try schema("unevaluatedProperties") { keywords.append(.unevaluatedProperties(node)) }
  }
}
