import CCSyncSystem

/// A schema resource: the `$dynamicAnchor`s declared in it, name to node.
struct SchemaResource: Sendable {
  var uri: String
  var dynamicAnchors: [String: Int]
}

/// Everything compiled from one schema document and those it references. `Sendable`.
final class SchemaProgram: Sendable {
  let nodes: [SchemaNode]
  let resources: [SchemaResource]
  let root: Int

  init(nodes: [SchemaNode], resources: [SchemaResource], root: Int) {
    self.nodes = nodes
    self.resources = resources
    self.root = root
  }
}
