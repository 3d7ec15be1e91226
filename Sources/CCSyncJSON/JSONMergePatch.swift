import CCSyncSystem

extension JSONValue {
  /// This value with an RFC 7396 JSON Merge Patch applied.
  ///
  /// A patch that is an object changes members: a member whose value is `null` removes that
  /// key, any other member is merged into the key's current value the same way (recursively),
  /// and a member for a new key is added at the end. A value that is not an object becomes
  /// `{}` before an object patch is merged into it. A patch that is not an object, `null`
  /// included, replaces the value whole; so arrays are replaced, never merged.
  ///
  /// Members the patch does not name keep their text and position, and a member the patch
  /// sets to an equal value (`1.5` for `1.50`) keeps its spelling.
  ///
  /// - Parameter patch: the merge patch document.
  /// - Returns: the patched value. A merge patch cannot fail.
  public func mergePatched(with patch: JSONValue) -> JSONValue {
    var result = self
    result.mergePatch(with: patch)
    return result
  }

  /// The algorithm of RFC 7396 section 2, changing `self` in place.
  private mutating func mergePatch(with patch: JSONValue) {
    guard case .object(let patchObject) = patch else {
      if self != patch { self = patch }
      return
    }
    var object = objectValue ?? JSONObject()
    // Take the object out so it is uniquely referenced and changes in place.
    self = .null
    for member in patchObject {
      if member.value.isNull {
        object.removeValue(forKey: member.key)
      } else if let position = object.position(of: member.key) {
        object.modifyValue(at: position) { $0.mergePatch(with: member.value) }
      } else {
        var child = JSONValue.null
        child.mergePatch(with: member.value)
        object[member.key] = child
      }
    }
    self = .object(object)
  }
}
