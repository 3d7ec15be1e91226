import CCSyncSystem
import CCSyncJSON

extension JSONTextEncoderImpl {
  /// Where a nested container's frame is, and how deep its coding path goes.
  struct NestedFrame {
    let position: Int
    let token: UInt32
    let pathDepth: Int
  }

  /// Opens a nested container's frame one `step` below the current path.
  func pushNestedFrame(isObject: Bool, step: consuming CodingPathStep) -> NestedFrame {
    let position = pushFrame(isObject: isObject)
    pushStep(step)
    return NestedFrame(position: position, token: frames[position].token, pathDepth: steps.count)
  }

  /// The first `depth` steps as a coding path, built now.
  func path(depth: Int) -> [any CodingKey] {
    var keys: [any CodingKey] = []
    keys.reserveCapacity(depth)
    for index in 0..<min(depth, steps.count) {
      switch steps[index] {
      case .none: break
      case .key(let key): keys.append(key)
      case .index(let index): keys.append(JSONCodingKey(intValue: index))
      }
    }
    return keys
  }

  /// The first `depth` steps as the tree encoder's linked path, for the few calls into the
  /// tree that may need one (an error, a dictionary, a custom strategy).
  func pathNode(depth: Int) -> CodingPathNode {
    var node = CodingPathNode.root
    for index in 0..<min(depth, steps.count) { node = node.appending(steps[index]) }
    return node
  }

  /// The coding path of the container whose frame is at `position` with `token`, `depth`
  /// steps down. The steps below a container stay as they were while its frame is open; once
  /// it is closed they may belong to a later sibling, so the path cannot be given from them and
  /// the single pass is abandoned (the tree encoder's run answers the same question rightly).
  func containerPath(depth: Int, position: Int, token: UInt32) -> [any CodingKey] {
    if !isOpen(position, token: token) { abandoned = true }
    return path(depth: depth)
  }

  /// Whether the frame at `position` is still the one with `token`.
  func isOpen(_ position: Int, token: UInt32) -> Bool {
    position >= 0 && position < frames.count && frames[position].token == token
  }
}

extension CodingPathStep {
  /// Whether this is the step that goes nowhere (a single-value container's).
  var isNone: Bool {
    if case .none = self { return true }
    return false
  }
}
