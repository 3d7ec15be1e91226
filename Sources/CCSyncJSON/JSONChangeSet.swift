import CCSyncSystem

/// A field-level change set: what changed between two JSON documents, as edits that can be
/// applied to a third one.
///
/// This is how a process saves without overwriting what it did not mean to change (see
/// docs/ARCHITECTURE.md, "Merging"): its unsaved edit is the change set from the JSON it last
/// synced to the JSON of its current value, and saving applies that change set to the file's
/// current JSON. Fields another process changed meanwhile survive.
///
/// Objects are compared member by member, recursively; arrays and scalars are replaced whole.
/// Values are compared with `JSONValue`'s `==`, by meaning: `1.50` and `1.5` are the same
/// number and member order does not count, so a value whose spelling is all that differs is no
/// change and the file keeps its text.
///
/// Applying, ``applied(to:)``:
/// - A set puts the value at its key path. A replaced member keeps its position; a new member
///   goes at the end of its object, new members in the order the target had them.
/// - Missing objects on the way are created. An object on the way that has become something
///   else (a string, an array, `null`) in the document is replaced by a new object holding the
///   change: where both sides changed a field, the later save wins, and a set is a statement
///   that the field should have this value. For a change set made by a difference
///   (``init(from:to:)``), that object is the whole object as `target` has it, not only the
///   changed members: an object missing the members its writer did not change could be one
///   its writer's type cannot read.
/// - A remove of a member that is absent, or whose parent is not an object, does nothing.
///
/// `JSONChangeSet` is a value type and `Sendable`.
public struct JSONChangeSet: Sendable, Equatable {
  /// One change at a key path: the keys of the nested objects leading to the member, from the
  /// root. Arrays are replaced whole, so a path never goes into an array.
  public enum Change: Sendable, Equatable {
    /// Sets the member at `path` to `value`; the empty path replaces the whole document.
    case set(path: [String], value: JSONValue)
    /// Removes the member at `path`.
    case remove(path: [String])

    /// The key path the change applies to.
    public var path: [String] {
      switch self {
      case .set(let path, _), .remove(let path): return path
      }
    }
  }

  /// The changes as a tree that mirrors the document: `nil` when there are none.
  package var root: Edit?

  /// An empty change set.
  public init() {
    root = nil
  }

  /// The change set that turns `base` into `target`:
  /// `JSONChangeSet(from: base, to: target).applied(to: base) == target`.
  ///
  /// Members removed from an object become removes, members added or changed become sets
  /// (changes inside an object that both sides have become changes of its members), and an
  /// array or scalar that differs becomes one set of the whole new value.
  public init(from base: JSONValue, to target: JSONValue) {
    root = Edit.difference(from: base, to: target)
  }

  /// Creates a change set that makes `changes` one after the other (a later change to a path
  /// wins over an earlier one). A remove of the empty path is ignored: the document always
  /// exists.
  package init(_ changes: [Change]) {
    root = nil
    for change in changes {
      var edit: Edit
      switch change {
      case .set(_, let value): edit = .set(value)
      case .remove(let path):
        if path.isEmpty { continue }
        edit = .remove
      }
      for key in change.path.reversed() {
        var members = KeyedEdits()
        members.set(edit, forKey: key)
        edit = .members(members)
      }
      root = root.map { Edit.compose($0, then: edit) } ?? edit
    }
  }

  /// Whether applying the change set leaves every document as it was.
  public var isEmpty: Bool { root == nil }

  /// The changes, depth first in the order of the keys: within an object, removes of
  /// members the target lacks come first, then sets in the target's member order.
  ///
  /// One effect has no entry of its own: a change set from ``merging(_:)`` where a later
  /// remove took back an earlier set still creates the (then empty) object that set would
  /// have created where it was missing, as applying the two in turn does.
  public var changes: [Change] {
    var result: [Change] = []
    root?.collectChanges(path: [], into: &result)
    return result
  }

  /// The paths the changes apply to, in the order of ``changes``. No path is a prefix of
  /// another.
  public var changedPaths: [JSONPath] {
    changes.map { JSONPath(tokens: $0.path) }
  }

  /// `document` with the changes applied; see the type's documentation for the rules.
  ///
  /// Values the changes do not touch keep their text and position, and so does a value the
  /// change would set to something equal by `==`.
  public func applied(to document: JSONValue) -> JSONValue {
    var result = document
    root?.apply(to: &result)
    return result
  }

  /// One change set that does what this one and then `later` do:
  /// `a.merging(b).applied(to: x) == b.applied(to: a.applied(to: x))` for every `x`.
  ///
  /// Where both change a path, `later` wins; a change of `later` inside a value this one
  /// sets is folded into that value.
  public func merging(_ later: JSONChangeSet) -> JSONChangeSet {
    var result = JSONChangeSet()
    switch (root, later.root) {
    case (nil, let edit), (let edit, nil): result.root = edit
    case (let earlier?, let later?): result.root = Edit.compose(earlier, then: later)
    }
    return result
  }

  /// The paths where this change set and `other` disagree, for a three-way merge of two
  /// change sets made from the same base (ours and theirs, as `ccsync edit` does).
  ///
  /// Two changes conflict when their paths are equal or one is a prefix of the other and they
  /// leave different values at the longer path: `a.x = 1` and `a.x = 2` conflict,
  /// `a.x = 1` twice does not; removing `a` conflicts with setting `a.x`, but setting
  /// `a = {"x": 1, "y": 2}` agrees with setting `a.x = 1` and conflicts with `a.x = 3`.
  /// Changes to different members never conflict, and applying both sets in either order
  /// gives the same document exactly when there is no conflict.
  ///
  /// No base document is needed: each change carries the value it leaves. (The base still
  /// matters: the answer means something only for two differences from the same base.)
  /// - Returns: the longer path of each disagreeing pair, in the order of this change set's
  ///   paths; empty when the two can be merged without a choice.
  public func conflicts(with other: JSONChangeSet) -> [JSONPath] {
    guard let ours = root, let theirs = other.root else { return [] }
    var result: [JSONPath] = []
    Edit.collectConflicts(ours, theirs, path: [], into: &result)
    return result
  }

  /// Equal when both make the same changes in the same order.
  public static func == (lhs: JSONChangeSet, rhs: JSONChangeSet) -> Bool {
    lhs.root == rhs.root
  }
}
