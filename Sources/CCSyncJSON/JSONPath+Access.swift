import CCSyncSystem

/// Reading, setting and removing the value at a path.
///
/// Each component resolves against the container the path meets: in an object, the token is a
/// key (a bracketed index such as `[0]` is an error there); in an array, the token must be a
/// decimal index or `-` (the position after the last element). `null` met on the way counts as
/// absent, as in jq: reading or removing through it finds nothing, setting through it puts a
/// new container in its place. A string, number or Boolean met on the way is an error
/// (``JSONPathError/notAContainer(path:at:kind:)``): the path can never exist in this document,
/// which the CLI reports differently from a value that is merely absent.
extension JSONValue {
  /// The value at `path`, or `nil` when there is none.
  ///
  /// Absent means: a missing key, an index at or beyond the end of an array, `-`, or `null`
  /// on the way.
  /// - Throws: ``JSONPathError/notAContainer(path:at:kind:)`` when the path goes through a
  ///   string, number or Boolean; ``JSONPathError/notAnIndex(path:at:token:)`` when a token
  ///   that is no index meets an array; ``JSONPathError/notAnArray(path:at:)`` when a
  ///   bracketed index meets an object.
  public func value(at path: JSONPath) throws(JSONPathError) -> JSONValue? {
    var current = self
    for (depth, component) in path.components.enumerated() {
      switch current {
      case .object(let object):
        if component.isIndexOnly { throw .notAnArray(path: path, at: path.prefix(depth)) }
        guard let member = object[component.token] else { return nil }
        current = member
      case .array(let elements):
        guard let position = component.arrayPosition else {
          throw .notAnIndex(path: path, at: path.prefix(depth), token: component.token)
        }
        guard case .index(let index) = position, index < elements.count else { return nil }
        current = elements[index]
      case .null:
        return nil
      case .bool, .number, .string:
        throw .notAContainer(path: path, at: path.prefix(depth), kind: current.kindName)
      }
    }
    return current
  }

  /// Puts `newValue` at `path`, replacing what is there; the root path replaces the document.
  ///
  /// - An existing object member keeps its position; a new one goes at the end.
  /// - In an array, index `count` (or `-`) appends; a lower index replaces that element.
  /// - Missing containers on the way are created: an array when the next component is a
  ///   bracketed index or `-`, otherwise an object. A missing token that looks like an index
  ///   (`a.0` where `a` is absent) therefore creates an object with the key `"0"`; write
  ///   `a[0]` to create an array.
  /// - `null` on the way is replaced by a new container, as a missing value would be.
  ///
  /// On failure the document is left unchanged.
  /// - Throws: ``JSONPathError/indexOutOfRange(path:at:token:count:)`` for an index beyond
  ///   `count`, and the errors of ``value(at:)`` for a scalar, a non-index token on an array
  ///   or a bracketed index on an object.
  public mutating func setValue(_ newValue: JSONValue, at path: JSONPath) throws(JSONPathError) {
    try JSONValue.set(newValue, in: &self, path: path, depth: 0)
  }

  /// Removes the value at `path` and returns it, or returns `nil` and changes nothing when
  /// there is none (see ``value(at:)`` for what counts as absent).
  ///
  /// Removing an array element moves the later elements down by one.
  /// - Throws: ``JSONPathError/cannotRemoveRoot`` for the root path, and the errors of
  ///   ``value(at:)``. On failure the document is left unchanged.
  @discardableResult
  public mutating func removeValue(at path: JSONPath) throws(JSONPathError) -> JSONValue? {
    if path.isRoot { throw .cannotRemoveRoot }
    return try JSONValue.remove(in: &self, path: path, depth: 0)
  }

  // The helpers below take a container out of its enum case and put `.null` in its place
  // while they change it, so the container is uniquely referenced and changes in place
  // instead of being copied at every level. `defer` puts it back, also when they throw.

  private static func set(
    _ newValue: JSONValue, in target: inout JSONValue, path: JSONPath, depth: Int
  ) throws(JSONPathError) {
    guard depth < path.components.count else {
      target = newValue
      return
    }
    let component = path.components[depth]
    switch target {
    case .object(var object):
      if component.isIndexOnly { throw .notAnArray(path: path, at: path.prefix(depth)) }
      target = .null
      defer { target = .object(object) }
      let key = component.token
      if let position = object.position(of: key) {
        // On failure the callee has restored the member.
        try object.modifyValue(at: position) { (child) throws(JSONPathError) in
          try set(newValue, in: &child, path: path, depth: depth + 1)
        }
      } else {
        var child = JSONValue.null
        try set(newValue, in: &child, path: path, depth: depth + 1)
        object[key] = child
      }
    case .array(var elements):
      guard let position = component.arrayPosition else {
        throw .notAnIndex(path: path, at: path.prefix(depth), token: component.token)
      }
      let index: Int
      switch position {
      case .end: index = elements.count
      case .index(let value): index = value
      }
      guard index <= elements.count else {
        throw .indexOutOfRange(
          path: path, at: path.prefix(depth), token: component.token, count: elements.count)
      }
      target = .null
      defer { target = .array(elements) }
      if index == elements.count {
        var child = JSONValue.null
        try set(newValue, in: &child, path: path, depth: depth + 1)
        elements.append(child)
      } else {
        var child = elements[index]
        elements[index] = .null
        defer { elements[index] = child }
        try set(newValue, in: &child, path: path, depth: depth + 1)
      }
    case .null:
      // Absent or null: build the container the component asks for, then set inside it.
      // Only a successful set replaces the null.
      let isArrayStep = component.isIndexOnly || component.token == "-"
      var fresh: JSONValue = isArrayStep ? .array([]) : .object(JSONObject())
      try set(newValue, in: &fresh, path: path, depth: depth)
      target = fresh
    case .bool, .number, .string:
      throw .notAContainer(path: path, at: path.prefix(depth), kind: target.kindName)
    }
  }

  private static func remove(
    in target: inout JSONValue, path: JSONPath, depth: Int
  ) throws(JSONPathError) -> JSONValue? {
    let component = path.components[depth]
    let isLast = depth + 1 == path.components.count
    switch target {
    case .object(var object):
      if component.isIndexOnly { throw .notAnArray(path: path, at: path.prefix(depth)) }
      let key = component.token
      guard let position = object.position(of: key) else { return nil }
      target = .null
      defer { target = .object(object) }
      if isLast { return object.removeValue(forKey: key) }
      return try object.modifyValue(at: position) { (child) throws(JSONPathError) in
        try remove(in: &child, path: path, depth: depth + 1)
      }
    case .array(var elements):
      guard let position = component.arrayPosition else {
        throw .notAnIndex(path: path, at: path.prefix(depth), token: component.token)
      }
      guard case .index(let index) = position, index < elements.count else { return nil }
      target = .null
      defer { target = .array(elements) }
      if isLast { return elements.remove(at: index) }
      var child = elements[index]
      elements[index] = .null
      defer { elements[index] = child }
      return try remove(in: &child, path: path, depth: depth + 1)
    case .null:
      return nil
    case .bool, .number, .string:
      throw .notAContainer(path: path, at: path.prefix(depth), kind: target.kindName)
    }
  }
}
