import CCSyncSystem

/// Finds `$ref` cycles that would apply a schema to the same instance forever: a path from a
/// node back to itself through keywords that stay on the same value (`$ref`, `$dynamicRef`,
/// `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`, `dependentSchemas`). Cycles that
/// pass through `properties`, `items` and the like are fine: each turn goes one level down
/// into the instance, which is finite.
struct SchemaCycleCheck {
  let program: SchemaProgram

  /// Throws a ``JSONSchemaError`` naming the nodes of the first cycle found.
  func run() throws(JSONSchemaError) {
    let nodes = program.nodes
    // Every node a $dynamicRef with this anchor name could land on, in any resource.
    var dynamicTargets: [String: [Int]] = [:]
    for resource in program.resources {
      for (name, node) in resource.dynamicAnchors { dynamicTargets[name, default: []].append(node) }
    }
    func successors(_ index: Int) -> [Int] {
      var result: [Int] = []
      for keyword in nodes[index].keywords {
        result += keyword.inPlaceNodes
        if case .dynamicRef(_, let anchor?) = keyword { result += dynamicTargets[anchor] ?? [] }
      }
      return result
    }
    // Iterative depth-first search: 0 unvisited, 1 on the current path, 2 done.
    var state = [UInt8](repeating: 0, count: nodes.count)
    for start in nodes.indices where state[start] == 0 {
      var stack: [(node: Int, next: [Int])] = [(start, successors(start))]
      state[start] = 1
      while !stack.isEmpty {
        if let next = stack[stack.count - 1].next.popLast() {
          switch state[next] {
          case 0:
            state[next] = 1
            stack.append((next, successors(next)))
          case 1:
            let path = stack.drop { $0.node != next }.map { nodes[$0.node].location } + [nodes[next].location]
            throw JSONSchemaError(
              schemaLocation: nodes[next].location,
              message: "$ref cycle that never reaches into the instance: " + path.joined(separator: " -> "))
          default:
            break
          }
        } else {
          state[stack.removeLast().node] = 2
        }
      }
    }
  }
}
