import CCSyncSystem

/// One step of the path from the instance's root to the value being checked.
enum InstanceStep {
  case key(String)
  case index(Int)
}

/// Applies a ``SchemaProgram`` to one instance. In reporting mode it records every failure
/// (with the instance path kept as it goes); otherwise it stops at the first one. Inside
/// `anyOf`, `oneOf`, `not`, `if`, `contains` and `propertyNames` it is silent, and the
/// combinator reports one failure of its own.
struct SchemaValidator {
  let program: SchemaProgram
  let nodes: [SchemaNode]
  let reporting: Bool
  var silence = 0
  var failures: [JSONSchemaFailure] = []
  var path: [InstanceStep] = []
  /// The resources entered on the way here, outermost first: the dynamic scope.
  var scope: [Int] = []
  var depth = 0

  /// Nesting of schema applications beyond which validation gives up with a failure rather
  /// than run out of stack. Compilation already rejects `$ref` cycles that would loop; this
  /// bounds deep instances under recursive schemas. A document as deep as the parser allows
  /// (512) under `{"items": {"$ref": "#"}}` takes 1,025 levels; a debug build on a test
  /// thread overflowed its stack near 3,000.
  static let maximumDepth = 1_500

  init(program: SchemaProgram, reporting: Bool) {
    self.program = program
    self.nodes = program.nodes
    self.reporting = reporting
  }

  /// Whether failures are being written down (reporting, and not inside a combinator).
  var recording: Bool { reporting && silence == 0 }

  /// The current instance location as a JSON Pointer.
  var pointer: String {
    var text = ""
    for step in path {
      text += "/"
      switch step {
      case .key(let key): SchemaURI.appendEscaped(key, to: &text)
      case .index(let index): text += String(index)
      }
    }
    return text
  }

  mutating func record(_ node: SchemaNode, _ keyword: String, _ message: @autoclosure () -> String, suffix: String = "") {
    guard recording else { return }
    failures.append(JSONSchemaFailure(
      instanceLocation: pointer, keyword: keyword, schemaLocation: node.location + "/" + keyword + suffix, message: message()))
  }

  /// Applies node `index` to `instance`; when `collect` is set, adds what it evaluated to
  /// `evaluated` (only if it passes, as failed schemas leave no annotations).
  mutating func evaluate(_ index: Int, _ instance: JSONValue, _ evaluated: inout SchemaEvaluated, collect: Bool) -> Bool {
    let node = nodes[index]
    if let constant = node.constant {
      if !constant, recording {
        failures.append(JSONSchemaFailure(
          instanceLocation: pointer, keyword: "false", schemaLocation: node.location,
          message: "\(SchemaMessages.show(instance)) is not allowed: the schema is false"))
      }
      return constant
    }
    depth += 1
    defer { depth -= 1 }
    if depth > SchemaValidator.maximumDepth {
      record(node, "$ref", "schemas nest more than \(SchemaValidator.maximumDepth) levels deep here; validation stops")
      return false
    }
    let entered = scope.last != node.resource
    if entered { scope.append(node.resource) }
    defer { if entered { scope.removeLast() } }
    let collectHere = collect || node.collectsAnnotations
    var local = SchemaEvaluated()
    var valid = true
    for keyword in node.keywords where !apply(keyword, of: node, to: instance, &local, collect: collectHere) {
      valid = false
      if !recording { return false }
    }
    if valid && collect { evaluated.merge(local) }
    return valid
  }

  /// Applies a subschema to a member or item of the instance (one step down). A `false`
  /// subschema is reported as the member or item not being allowed, under `keyword`.
  mutating func evaluateChild(_ index: Int, _ value: JSONValue, _ step: InstanceStep, _ parent: SchemaNode, _ keyword: String) -> Bool {
    // The commonest leaf, `{"type": ...}`, passing: no path step, no node entered.
    if let types = nodes[index].onlyTypes, SchemaValidator.matches(types, value) { return true }
    if reporting { path.append(step) }
    defer { if reporting { path.removeLast() } }
    if nodes[index].constant == false {
      let what: String
      switch step {
      case .key(let key): what = "property \(SchemaMessages.show(key))"
      case .index(let position): what = "item \(position)"
      }
      record(parent, keyword, "\(what) is not allowed")
      return false
    }
    var ignored = SchemaEvaluated()
    return evaluate(index, value, &ignored, collect: false)
  }

  /// Applies a subschema silently, for a combinator that reports on its own.
  mutating func evaluateSilently(_ index: Int, _ instance: JSONValue, _ evaluated: inout SchemaEvaluated, collect: Bool) -> Bool {
    silence += 1
    defer { silence -= 1 }
    return evaluate(index, instance, &evaluated, collect: collect)
  }
}
