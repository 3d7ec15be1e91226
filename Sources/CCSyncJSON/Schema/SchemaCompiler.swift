import CCSyncSystem

/// Turns schema documents into a ``SchemaProgram``: finds every `$id`, `$anchor` and
/// `$dynamicAnchor`, compiles each schema reachable from the root once, links `$ref`s by
/// node index, and rejects `$ref` cycles that never reach into the instance.
final class SchemaCompiler {
  typealias Resolver = (String) throws -> JSONValue?

  let rootDocument: String
  let resolver: Resolver?
  let assertFormats: Bool

  var documents: [String: JSONValue] = [:]
  var vocabularies: [String: SchemaVocabularies] = [:]
  /// Absolute URI (no fragment) to the location of its resource's root.
  var identified: [String: SchemaLocation] = [:]
  /// `uri#name` to the location of the schema with that `$anchor` or `$dynamicAnchor`.
  var anchors: [String: SchemaLocation] = [:]
  /// Location key to the base URI and resource index in force there, for every schema found.
  var scopes: [String: (base: String, resource: Int)] = [:]
  /// Location key to the name of the `$dynamicAnchor` there.
  var dynamicAnchorAt: [String: String] = [:]
  var resources: [SchemaResource] = []
  var resourceDynamicLocations: [[String: SchemaLocation]] = []

  /// What the resolver returned for each URI asked, `nil` included, so it is asked once.
  var fetched: [String: JSONValue?] = [:]

  var nodes: [SchemaNode?] = []
  var nodeIndexes: [String: Int] = [:]
  var pending: [(index: Int, location: SchemaLocation)] = []

  init(rootDocument: String, resolver: Resolver?, assertFormats: Bool) {
    self.rootDocument = rootDocument
    self.resolver = resolver
    self.assertFormats = assertFormats
  }

  /// Compiles `document`, named ``rootDocument``, and everything it references.
  func compile(_ document: JSONValue) throws(JSONSchemaError) -> SchemaProgram {
    try addDocument(document, uri: rootDocument)
    let root = node(at: SchemaLocation(document: rootDocument, tokens: []))
    repeat {
      while let (index, location) = pending.popLast() {
        nodes[index] = try compileNode(at: location)
      }
      // Every dynamic anchor of every resource, by node index, for `$dynamicRef`; compiling
      // them can load more documents, with more anchors, hence the loop.
      for (resource, locations) in resourceDynamicLocations.enumerated() {
        for (name, location) in locations where resources[resource].dynamicAnchors[name] == nil {
          resources[resource].dynamicAnchors[name] = node(at: location)
        }
      }
    } while !pending.isEmpty
    let program = SchemaProgram(nodes: nodes.map { $0! }, resources: resources, root: root)
    try SchemaCycleCheck(program: program).run()
    return program
  }

  /// A description of `location` for messages: `#/a/b` in the root document, else the full URI.
  func describe(_ location: SchemaLocation) -> String {
    (location.document == rootDocument ? "" : location.document) + "#" + SchemaURI.pointer(location.tokens)
  }

  func error(_ location: SchemaLocation, _ message: String) -> JSONSchemaError {
    JSONSchemaError(schemaLocation: describe(location), message: message)
  }

  // MARK: Documents and identifiers

  func addDocument(_ document: JSONValue, uri: String) throws(JSONSchemaError) {
    documents[uri] = document
    let location = SchemaLocation(document: uri, tokens: [])
    identified[uri] = location
    vocabularies[uri] = try vocabularies(of: document, location: location)
    resources.append(SchemaResource(uri: uri, dynamicAnchors: [:]))
    resourceDynamicLocations.append([:])
    try scan(document, at: location, base: uri, resource: resources.count - 1)
  }

  /// Records the identifiers in the schema at `location` and its subschemas.
  func scan(_ value: JSONValue, at location: SchemaLocation, base: String, resource: Int) throws(JSONSchemaError) {
    guard case .object(let object) = value else {
      if case .bool = value { scopes[location.key] = (base, resource) }
      return
    }
    var base = base
    var resource = resource
    if let id = object["$id"] {
      guard case .string(let text) = id else { throw error(location.appending("$id"), "$id must be a string, not \(id.kindName)") }
      let resolved = SchemaURI.splitFragment(SchemaURI.resolve(text, against: base)).resource
      if location.tokens.isEmpty, resources[resource].uri == location.document {
        resources[resource].uri = resolved
      } else {
        resources.append(SchemaResource(uri: resolved, dynamicAnchors: [:]))
        resourceDynamicLocations.append([:])
        resource = resources.count - 1
      }
      base = resolved
      identified[resolved] = location
    }
    for keyword in ["$anchor", "$dynamicAnchor"] {
      guard let anchor = object[keyword] else { continue }
      guard case .string(let name) = anchor, SchemaCompiler.isAnchorName(name) else {
        throw error(location.appending(keyword), "\(keyword) must be a plain name (a letter or _, then letters, digits, -, _, . or :)")
      }
      anchors[base + "#" + name] = location
      if keyword == "$dynamicAnchor" {
        resourceDynamicLocations[resource][name] = location
        dynamicAnchorAt[location.key] = name
      }
    }
    scopes[location.key] = (base, resource)
    for member in object {
      switch member.key {
      case "$defs", "properties", "patternProperties", "dependentSchemas":
        guard case .object(let children) = member.value else { continue }
        for child in children {
          try scan(child.value, at: location.appending(member.key).appending(child.key), base: base, resource: resource)
        }
      case "allOf", "anyOf", "oneOf", "prefixItems":
        guard case .array(let children) = member.value else { continue }
        for (position, child) in children.enumerated() {
          try scan(child, at: location.appending(member.key).appending(String(position)), base: base, resource: resource)
        }
      case "items", "contains", "additionalProperties", "propertyNames", "if", "then", "else", "not",
        "unevaluatedItems", "unevaluatedProperties", "contentSchema":
        try scan(member.value, at: location.appending(member.key), base: base, resource: resource)
      default:
        continue
      }
    }
  }

  static func isAnchorName(_ name: String) -> Bool {
    guard let first = name.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic || first == "_" else { return false }
    return name.unicodeScalars.allSatisfy {
      $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_.:".unicodeScalars.contains($0))
    }
  }

  /// The location of the resource `uri` names, loading its document through the resolver the
  /// first time; `nil` when no document has that URI.
  func resourceLocation(_ uri: String, from location: SchemaLocation) throws(JSONSchemaError) -> SchemaLocation? {
    if let found = identified[uri] { return found }
    guard documents[uri] == nil else { return nil }
    let document: JSONValue?
    do {
      document = try fetch(uri)
    } catch {
      throw self.error(location, "loading \(uri) failed: \(error)")
    }
    guard let document else { return nil }
    try addDocument(document, uri: uri)
    return identified[uri]
  }

  /// The resolver's document for `uri`, asking it at most once per URI.
  func fetch(_ uri: String) throws -> JSONValue? {
    if let known = fetched[uri] { return known }
    let document = try resolver?(uri)
    fetched[uri] = .some(document)
    return document
  }

  /// The value at `location`, or `nil` when the pointer leads nowhere.
  func value(at location: SchemaLocation) -> JSONValue? {
    guard var value = documents[location.document] else { return nil }
    for token in location.tokens {
      switch value {
      case .object(let object):
        guard let member = object[token] else { return nil }
        value = member
      case .array(let elements):
        guard let index = Int(token), elements.indices.contains(index) else { return nil }
        value = elements[index]
      default:
        return nil
      }
    }
    return value
  }

  /// The location a `$ref` or `$dynamicRef` value names, resolved against `base`.
  func resolveReference(_ reference: String, base: String, from location: SchemaLocation) throws(JSONSchemaError) -> SchemaLocation {
    let absolute = SchemaURI.resolve(reference, against: base)
    let (uri, rawFragment) = SchemaURI.splitFragment(absolute)
    let fragment = SchemaURI.percentDecoded(rawFragment)
    if fragment.isEmpty || fragment.hasPrefix("/") {
      guard let root = try resourceLocation(uri, from: location) else {
        throw error(location, "$ref \"\(reference)\" names \(uri), which is not a known schema")
      }
      let tokens = SchemaURI.pointerTokens(fragment) ?? []
      let target = SchemaLocation(document: root.document, tokens: root.tokens + tokens)
      guard value(at: target) != nil else {
        throw error(location, "$ref \"\(reference)\" points to nothing: \(uri) has no \(fragment)")
      }
      return target
    }
    if anchors[uri + "#" + fragment] == nil { _ = try resourceLocation(uri, from: location) }
    guard let target = anchors[uri + "#" + fragment] else {
      throw error(location, "$ref \"\(reference)\" names the anchor \"\(fragment)\", which \(uri) does not define")
    }
    return target
  }

  // MARK: Nodes

  /// The index of the node for the schema at `location`, compiled later if new.
  func node(at location: SchemaLocation) -> Int {
    let key = location.key
    if let index = nodeIndexes[key] { return index }
    nodes.append(nil)
    let index = nodes.count - 1
    nodeIndexes[key] = index
    pending.append((index, location))
    return index
  }

  /// The base URI and resource in force at `location`; a schema reached through a pointer
  /// into a place the scan did not visit (an unknown keyword) is scanned now, with the scope
  /// of its nearest scanned ancestor.
  func scope(at location: SchemaLocation) throws(JSONSchemaError) -> (base: String, resource: Int) {
    if let scope = scopes[location.key] { return scope }
    var ancestor = location
    var inherited: (base: String, resource: Int)?
    while !ancestor.tokens.isEmpty, inherited == nil {
      ancestor.tokens.removeLast()
      inherited = scopes[ancestor.key]
    }
    let outer = inherited ?? (location.document, 0)
    if let value = value(at: location) { try scan(value, at: location, base: outer.base, resource: outer.resource) }
    return scopes[location.key] ?? outer
  }
}
