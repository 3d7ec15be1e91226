import CCSyncSystem

extension JSONChangeSet {
  /// The change to one value: replace it, remove it, or change some members of the object it
  /// is. A tree of these mirrors the document, which makes applying, composing and comparing
  /// change sets one walk each.
  package enum Edit: Sendable, Equatable {
    case set(JSONValue)
    case remove
    case members(KeyedEdits)

    // MARK: Difference

    /// The edit that turns `base` into `target`, or `nil` when they are equal.
    package static func difference(from base: JSONValue, to target: JSONValue) -> Edit? {
      guard case .object(let baseObject) = base, case .object(let targetObject) = target else {
        return base == target ? nil : .set(target)
      }
      var edits = KeyedEdits()
      edits.whole = target
      for member in baseObject where targetObject.position(of: member.key) == nil {
        edits.set(.remove, forKey: member.key)
      }
      for member in targetObject {
        if let old = baseObject[member.key] {
          if let edit = difference(from: old, to: member.value) { edits.set(edit, forKey: member.key) }
        } else {
          edits.set(.set(member.value), forKey: member.key)
        }
      }
      return edits.isEmpty ? nil : .members(edits)
    }

    // MARK: Applying

    /// Whether applying the edit where there is no object puts a value there. Members that
    /// only remove do not create a missing object, unless composing said they must.
    package var createsValue: Bool {
      switch self {
      case .set: return true
      case .remove: return false
      case .members(let edits):
        return edits.createsObject || edits.contains { $0.edit.createsValue }
      }
    }

    /// Applies the edit to `target`. A `.remove` here (only possible at the root) does
    /// nothing; removes are carried out by the object holding the member.
    package func apply(to target: inout JSONValue) {
      switch self {
      case .set(let value):
        // An equal value keeps the document's spelling.
        if target != value { target = value }
      case .remove:
        break
      case .members(let edits):
        guard case .object(var object) = target else {
          guard createsValue else { return }
          if let whole = edits.whole {
            target = whole
            return
          }
          var fresh = JSONValue.object(JSONObject())
          apply(to: &fresh)
          target = fresh
          return
        }
        // Take the object out of `target` so it is uniquely referenced and changes in place.
        target = .null
        for (key, edit) in edits {
          switch edit {
          case .remove:
            object.removeValue(forKey: key)
          case .set(let value):
            if let old = object[key], old == value { continue }
            object[key] = value
          case .members:
            if let position = object.position(of: key) {
              object.modifyValue(at: position) { edit.apply(to: &$0) }
            } else if edit.createsValue {
              var child = JSONValue.null
              edit.apply(to: &child)
              object[key] = child
            }
          }
        }
        target = .object(object)
      }
    }

    // MARK: Composing

    /// The edit that does `earlier` and then `later`.
    package static func compose(_ earlier: Edit, then later: Edit) -> Edit {
      guard case .members(let laterEdits) = later else { return later }
      switch earlier {
      case .members(var edits):
        // Where there was no object, `earlier` creates one if it sets anything; `later` may
        // remove all that was set, but the object stays.
        let createsObject = earlier.createsValue || later.createsValue
        for (key, edit) in laterEdits {
          edits.set(edits[key].map { compose($0, then: edit) } ?? edit, forKey: key)
        }
        edits.createsObject = createsObject
        // The object after both, where the earlier edits put a whole object: that object
        // with the later edits applied, as applying one set after the other would give.
        edits.whole = edits.whole.map { whole in
          var after = whole
          later.apply(to: &after)
          return after
        }
        return .members(edits)
      case .set(var value):
        later.apply(to: &value)
        return .set(value)
      case .remove:
        guard later.createsValue else { return .remove }
        var value = JSONValue.null
        later.apply(to: &value)
        return .set(value)
      }
    }

    // MARK: Listing and comparing

    package func collectChanges(path: [String], into changes: inout [Change]) {
      switch self {
      case .set(let value): changes.append(.set(path: path, value: value))
      case .remove: changes.append(.remove(path: path))
      case .members(let edits):
        for (key, edit) in edits { edit.collectChanges(path: path + [key], into: &changes) }
      }
    }

    /// The value a `.set` or `.remove` leaves: the value, or `nil` for absent.
    private var leftValue: JSONValue? {
      if case .set(let value) = self { return value }
      return nil
    }

    package static func collectConflicts(
      _ ours: Edit, _ theirs: Edit, path: [String], into conflicts: inout [JSONPath]
    ) {
      switch (ours, theirs) {
      case (.members(let ourEdits), .members(let theirEdits)):
        for (key, edit) in ourEdits {
          guard let other = theirEdits[key] else { continue }
          collectConflicts(edit, other, path: path + [key], into: &conflicts)
        }
      case (.members(let edits), let whole), (let whole, .members(let edits)):
        collectConflicts(edits, against: whole.leftValue, path: path, into: &conflicts)
      default:
        if ours.leftValue != theirs.leftValue { conflicts.append(JSONPath(tokens: path)) }
      }
    }

    /// Compares member edits with the value one whole `.set` or `.remove` left at `path`.
    private static func collectConflicts(
      _ edits: KeyedEdits, against value: JSONValue?, path: [String],
      into conflicts: inout [JSONPath]
    ) {
      for (key, edit) in edits {
        let member = value?.objectValue?[key]
        switch edit {
        case .members(let inner):
          collectConflicts(inner, against: member, path: path + [key], into: &conflicts)
        case .set, .remove:
          if edit.leftValue != member { conflicts.append(JSONPath(tokens: path + [key])) }
        }
      }
    }
  }

  /// Edits to members of one object, by key (compared by their bytes, ``ExactKey``), in the
  /// order the keys were first added.
  package struct KeyedEdits: Sendable, Equatable, Sequence {
    private var keys: [ExactKey] = []
    private var edits: [ExactKey: Edit] = [:]
    /// Whether applying these edits where there is no object creates one even if no member
    /// is set: true after composing an edit that created the object with one that removed
    /// what it set. Never true in a change set made by a difference.
    package var createsObject = false
    /// The whole object these edits turn their base into, for edits made by a difference.
    /// Where there is no object any more to apply them to (another writer removed it, or
    /// made it a scalar or an array), this whole object is put there: an object holding only
    /// the changed members would lack the others, which the writer's type may require. Edits
    /// made from paths have none, and create an object holding only what they set. Part of
    /// equality: two change sets are equal only if they apply alike everywhere.
    package var whole: JSONValue?

    package var isEmpty: Bool { keys.isEmpty }

    /// The edit for `key`, if any.
    package subscript(key: String) -> Edit? { edits[ExactKey(key)] }

    /// Sets the edit for `key`: for a new key it goes at the end, for a known key it replaces
    /// the old one where it stands.
    package mutating func set(_ edit: Edit, forKey key: String) {
      if edits.updateValue(edit, forKey: ExactKey(key)) == nil { keys.append(ExactKey(key)) }
    }

    package func makeIterator() -> AnyIterator<(key: String, edit: Edit)> {
      var position = keys.startIndex
      return AnyIterator { [keys, edits] () -> (key: String, edit: Edit)? in
        guard position < keys.endIndex else { return nil }
        defer { position += 1 }
        return (keys[position].string, edits[keys[position]]!)
      }
    }

    package static func == (lhs: KeyedEdits, rhs: KeyedEdits) -> Bool {
      lhs.keys == rhs.keys && lhs.edits == rhs.edits && lhs.createsObject == rhs.createsObject && lhs.whole == rhs.whole
    }
  }
}
