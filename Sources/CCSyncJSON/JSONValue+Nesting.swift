/// How deep a value nests arrays and objects.
extension JSONValue {
  /// The deepest nesting of arrays and objects in this value, counted as the parser and the
  /// printer count it: a scalar is 0, an array or object 1 more than its deepest element.
  /// What a writer checks against the readers' limit before it writes text it did not print.
  package var nestingDepth: Int {
    switch self {
    case .array(let elements):
      return 1 + elements.reduce(0) { Swift.max($0, $1.nestingDepth) }
    case .object(let object):
      return 1 + object.members.reduce(0) { Swift.max($0, $1.value.nestingDepth) }
    default:
      return 0
    }
  }
}

extension JSONValue {
  /// How deep the parts of this value that differ from `old` nest, counted from this value
  /// down (a scalar 0, a container 1 more than its deepest changed part): what a writer
  /// checks against the readers' limit when it edits the text of `old`, a value read within
  /// that limit, into this one. An array or object that shares its storage with the one at
  /// the same place in `old` (a copy not changed since) counts 0: its text and its depth
  /// there are `old`'s. Walks the changed paths, not the whole value.
  package func nestingDepth(changedFrom old: JSONValue) -> Int {
    switch (self, old) {
    case (.array(let elements), .array(let oldElements)):
      let shared = elements.withUnsafeBufferPointer { mine in oldElements.withUnsafeBufferPointer { mine.baseAddress == $0.baseAddress } }
      if shared && elements.count == oldElements.count { return 0 }
      var deepest = 0
      for index in elements.indices {
        let depth = index < oldElements.count ? elements[index].nestingDepth(changedFrom: oldElements[index]) : elements[index].nestingDepth
        deepest = Swift.max(deepest, depth)
      }
      return 1 + deepest
    case (.object(let object), .object(let oldObject)):
      let shared = object.members.withUnsafeBufferPointer { mine in
        oldObject.members.withUnsafeBufferPointer { mine.baseAddress == $0.baseAddress }
      }
      if shared && object.count == oldObject.count { return 0 }
      var deepest = 0
      for (index, member) in object.members.enumerated() {
        let oldPosition = index < oldObject.count && oldObject[index].key.hasSameBytes(as: member.key) ? index : oldObject.position(of: member.key)
        let depth = oldPosition.map { member.value.nestingDepth(changedFrom: oldObject[$0].value) } ?? member.value.nestingDepth
        deepest = Swift.max(deepest, depth)
      }
      return 1 + deepest
    default:
      return nestingDepth
    }
  }
}
