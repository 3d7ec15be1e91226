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
