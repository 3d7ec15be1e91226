import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

@Suite struct JSONChangeSetTests {
  static let base: JSONValue = [
    "theme": "light",
    "fontSize": 13,
    "window": ["width": 800, "height": 600],
    "recent": ["a", "b"],
    "old": true,
  ]
  static let target: JSONValue = [
    "theme": "dark",
    "fontSize": 13,
    "window": ["width": 1024, "height": 600, "x": 0],
    "recent": ["a", "b", "c"],
    "new": 1,
  ]

  @Test func diffsObjectsPerKeyAndReplacesArraysWhole() {
    let changes = JSONChangeSet(from: Self.base, to: Self.target)
    #expect(
      changes.changes == [
        .remove(path: ["old"]),
        .set(path: ["theme"], value: "dark"),
        .set(path: ["window", "width"], value: 1024),
        .set(path: ["window", "x"], value: 0),
        .set(path: ["recent"], value: ["a", "b", "c"]),
        .set(path: ["new"], value: 1),
      ])
    #expect(changes.changedPaths.map(\.description) == ["old", "theme", "window.width", "window.x", "recent", "new"])
    #expect(!changes.isEmpty)
    let result = changes.applied(to: Self.base)
    #expect(result == Self.target)
    #expect(result.objectValue?.keys == ["theme", "fontSize", "window", "recent", "new"])
    #expect(result.objectValue?["window"]?.objectValue?.keys == ["width", "height", "x"])
  }

  @Test func scalarsAndTheRootAreReplacedWhole() {
    #expect(JSONChangeSet(from: 1, to: "x").changes == [.set(path: [], value: "x")])
    #expect(JSONChangeSet(from: [:], to: []).changes == [.set(path: [], value: [])])
    #expect(JSONChangeSet(from: ["a": [1, ["b": 2]]], to: ["a": [1, ["b": 3]]]).changes == [.set(path: ["a"], value: [1, ["b": 3]])])
    #expect(JSONChangeSet(from: ["a": ["b": 1]], to: ["a": 5]).changes == [.set(path: ["a"], value: 5)])
    #expect(JSONChangeSet(from: ["a": nil], to: ["a": ["b": 1]]).changes == [.set(path: ["a"], value: ["b": 1])])
    #expect(JSONChangeSet(from: 1, to: "x").applied(to: ["anything": true]) == "x")
  }

  /// Equality by meaning: a different spelling or member order is no change.
  @Test func spellingAndOrderAreNoChange() throws {
    let spelled = try #require(JSONNumber(text: "1.50"))
    let plain = try #require(JSONNumber(text: "1.5"))
    let base: JSONValue = ["n": .number(spelled), "o": ["a": 1, "b": 2], "e": .number(JSONNumber(text: "1e2")!)]
    let target: JSONValue = ["o": ["b": 2, "a": 1], "e": 100, "n": .number(plain)]
    let changes = JSONChangeSet(from: base, to: target)
    #expect(changes.isEmpty)
    #expect(changes == JSONChangeSet())
    #expect(changes.applied(to: base).objectValue?["n"]?.numberValue?.text == "1.50")

    // A set to a value equal to the document's keeps the document's spelling and order.
    let set = JSONChangeSet(from: ["n": 1, "o": 1], to: ["n": .number(plain), "o": ["b": 2, "a": 1]])
    let result = set.applied(to: base)
    #expect(result.objectValue?["n"]?.numberValue?.text == "1.50")
    #expect(result.objectValue?["o"]?.objectValue?.keys == ["a", "b"])
  }

  /// Saving applies the change set to the file's current JSON: fields another process
  /// changed meanwhile survive, and where both changed one field the later save wins.
  @Test func applyingToAnotherDocumentKeepsItsOtherChanges() {
    let changes = JSONChangeSet(from: Self.base, to: Self.target)
    var theirs = Self.base
    theirs = JSONChangeSet([
      .set(path: ["fontSize"], value: 14),
      .set(path: ["window", "height"], value: 700),
      .set(path: ["theme"], value: "blue"),
      .set(path: ["plugins"], value: ["p"]),
      .remove(path: ["recent"]),
    ]).applied(to: theirs)
    let merged = changes.applied(to: theirs)
    #expect(
      merged == [
        "theme": "dark", "fontSize": 14, "window": ["width": 1024, "height": 700, "x": 0],
        "plugins": ["p"], "recent": ["a", "b", "c"], "new": 1,
      ])
    #expect(merged.objectValue?.keys == ["theme", "fontSize", "window", "plugins", "recent", "new"])
  }

  static let applications: [(JSONChangeSet, JSONValue, JSONValue)] = [
    // Missing parents are created.
    (JSONChangeSet([.set(path: ["a", "b", "c"], value: 1)]), [:], ["a": ["b": ["c": 1]]]),
    // A parent that became something else is replaced by an object holding the change.
    (JSONChangeSet([.set(path: ["a", "b"], value: 1)]), ["a": 5], ["a": ["b": 1]]),
    (JSONChangeSet([.set(path: ["a", "b"], value: 1)]), ["a": [1, 2]], ["a": ["b": 1]]),
    (JSONChangeSet([.set(path: ["a", "b"], value: 1)]), ["a": nil], ["a": ["b": 1]]),
    (JSONChangeSet([.set(path: ["a"], value: 1)]), "scalar root", ["a": 1]),
    // Removes of absent members, or under a non-object, do nothing.
    (JSONChangeSet([.remove(path: ["a"])]), ["b": 1], ["b": 1]),
    (JSONChangeSet([.remove(path: ["a", "b"])]), ["a": 5], ["a": 5]),
    (JSONChangeSet([.remove(path: ["a", "b", "c"])]), ["b": 1], ["b": 1]),
    (JSONChangeSet([.remove(path: ["a", "b"])]), [1], [1]),
    (JSONChangeSet([.remove(path: [])]), ["a": 1], ["a": 1]),
    // A set next to removes still creates what it needs.
    (JSONChangeSet([.remove(path: ["a", "x"]), .set(path: ["a", "y"], value: 2)]), ["a": "s"], ["a": ["y": 2]]),
  ]

  @Test(arguments: applications)
  func applies(changes: JSONChangeSet, document: JSONValue, expected: JSONValue) {
    #expect(changes.applied(to: document) == expected)
  }

  /// A change set made by a difference, applied where the object it changes is gone or has
  /// become something else (another process deleted or replaced it), puts back the whole
  /// object as the change's writer had it, not an object holding only the changed members,
  /// which its writer's type could not read (`proxy` without its `host`). The same for an
  /// entry of a map, and for a change set composed of two differences.
  @Test(arguments: [nil, 5, [1, 2], "text"] as [JSONValue?])
  func aDifferenceAppliedWhereItsObjectIsGonePutsTheWholeObjectBack(replacement: JSONValue?) {
    let base: JSONValue = ["theme": "dark", "proxy": ["host": "p.example", "port": 8080], "map": ["k": ["a": 1, "b": 2]]]
    var target = base
    try? target.setValue(8081, at: JSONPath(tokens: ["proxy", "port"]))
    try? target.setValue(3, at: JSONPath(tokens: ["map", "k", "b"]))
    let changes = JSONChangeSet(from: base, to: target)
    var theirs: JSONValue = ["theme": "light", "map": [:]]
    if let replacement { try? theirs.setValue(replacement, at: JSONPath(tokens: ["proxy"])) }
    let merged = changes.applied(to: theirs)
    #expect(merged == ["theme": "light", "proxy": ["host": "p.example", "port": 8081], "map": ["k": ["a": 1, "b": 3]]])

    var later = target
    try? later.setValue("q.example", at: JSONPath(tokens: ["proxy", "host"]))
    let composed = changes.merging(JSONChangeSet(from: target, to: later))
    #expect(composed.applied(to: theirs).objectValue?["proxy"] == ["host": "q.example", "port": 8081])
    // Where the object is still there, only the changed members are applied, as before.
    let kept: JSONValue = ["proxy": ["host": "other", "port": 1, "extra": true]]
    #expect(changes.applied(to: kept).objectValue?["proxy"] == ["host": "other", "port": 8081, "extra": true])
  }

  /// `merging` still does what applying one set and then the other does, where the earlier
  /// set puts a whole object back, whatever the later one's base was; and two change sets are
  /// equal only if they apply alike everywhere (a difference and the same changes by path
  /// do not, where the object is gone).
  @Test func wholeObjectsKeepMergingAndEqualityExact() {
    let first = JSONChangeSet(from: ["p": ["x": 1]], to: ["p": ["x": 2]])
    let second = JSONChangeSet(from: ["p": ["x": 5, "y": 1]], to: ["p": ["x": 5, "y": 2]])
    for document: JSONValue in [[:], ["p": 3], ["p": ["x": 0, "z": 1]]] {
      #expect(first.merging(second).applied(to: document) == second.applied(to: first.applied(to: document)), "\(document)")
    }
    #expect(first != JSONChangeSet([.set(path: ["p", "x"], value: 2)]))
    #expect(first == JSONChangeSet(from: ["p": ["x": 1]], to: ["p": ["x": 2]]))
  }

  // MARK: Composing

  @Test func mergingComposesLaterWins() {
    let first = JSONChangeSet([.set(path: ["a", "x"], value: 1), .set(path: ["b"], value: ["k": 1])])
    let second = JSONChangeSet([.set(path: ["a", "x"], value: 2), .set(path: ["b", "j"], value: 2), .remove(path: ["c"])])
    let both = first.merging(second)
    #expect(
      both.changes == [
        .set(path: ["a", "x"], value: 2), .set(path: ["b"], value: ["k": 1, "j": 2]), .remove(path: ["c"]),
      ])
    #expect(JSONChangeSet().merging(first) == first)
    #expect(first.merging(JSONChangeSet()) == first)
    let removeThenSet = JSONChangeSet([.remove(path: ["a"]), .set(path: ["a", "b"], value: 1)])
    #expect(removeThenSet.changes == [.set(path: ["a"], value: ["b": 1])])
    let removeThenRemoveInside = JSONChangeSet([.remove(path: ["a"]), .remove(path: ["a", "b"])])
    #expect(removeThenRemoveInside.changes == [.remove(path: ["a"])])

    // A set that creates an object, then a remove of what it set: the object stays.
    let setThenTakeBack = JSONChangeSet([.set(path: ["a", "b"], value: 1), .remove(path: ["a", "b"])])
    let removeOnly = JSONChangeSet([.remove(path: ["a", "b"])])
    #expect(setThenTakeBack.changes == removeOnly.changes)
    #expect(setThenTakeBack.applied(to: [:]) == ["a": [:]])
    #expect(setThenTakeBack.applied(to: ["a": 5]) == ["a": [:]])
    #expect(removeOnly.applied(to: [:]) == [:])
    #expect(removeOnly.applied(to: ["a": 5]) == ["a": 5])
    #expect(setThenTakeBack != removeOnly)
  }

  // MARK: Conflicts

  static let conflictCases: [([JSONChangeSet.Change], [JSONChangeSet.Change], [String])] = [
    ([.set(path: ["a", "x"], value: 1)], [.set(path: ["a", "x"], value: 2)], ["a.x"]),
    ([.set(path: ["a", "x"], value: 1)], [.set(path: ["a", "x"], value: 1)], []),
    ([.set(path: ["n"], value: 1.5)], [.set(path: ["n"], value: .number(JSONNumber(text: "1.50")!))], []),
    ([.remove(path: ["a"])], [.remove(path: ["a"])], []),
    ([.remove(path: ["a"])], [.set(path: ["a"], value: nil)], ["a"]),
    ([.remove(path: ["a"])], [.set(path: ["a", "x"], value: 1)], ["a.x"]),
    ([.set(path: ["a", "x"], value: 1)], [.remove(path: ["a"])], ["a.x"]),
    ([.set(path: ["a"], value: ["x": 1, "y": 2])], [.set(path: ["a", "x"], value: 1)], []),
    ([.set(path: ["a"], value: ["x": 1, "y": 2])], [.set(path: ["a", "x"], value: 3)], ["a.x"]),
    ([.set(path: ["a"], value: ["x": 1])], [.remove(path: ["a", "y"])], []),
    ([.set(path: ["a"], value: ["x": 1])], [.remove(path: ["a", "x"])], ["a.x"]),
    ([.set(path: ["a"], value: 5)], [.remove(path: ["a", "x", "y"])], []),
    ([.set(path: ["a"], value: 5)], [.set(path: ["a", "x", "y"], value: 1)], ["a.x.y"]),
    ([.set(path: ["a", "x"], value: 1)], [.set(path: ["a", "y"], value: 2)], []),
    ([.set(path: [], value: ["a": 1])], [.set(path: ["a"], value: 1), .set(path: ["b"], value: 2)], ["b"]),
    (
      [.set(path: ["a"], value: 1), .set(path: ["b", "c"], value: 1), .set(path: ["z"], value: 1)],
      [.set(path: ["z"], value: 2), .set(path: ["b"], value: 0), .set(path: ["a"], value: 2)],
      ["a", "b.c", "z"]
    ),
    ([], [.set(path: ["a"], value: 1)], []),
  ]

  @Test(arguments: conflictCases)
  func conflicts(ours: [JSONChangeSet.Change], theirs: [JSONChangeSet.Change], expected: [String]) {
    let ours = JSONChangeSet(ours)
    let theirs = JSONChangeSet(theirs)
    #expect(ours.conflicts(with: theirs).map(\.description) == expected)
    #expect(Set(theirs.conflicts(with: ours).map(\.description)) == Set(expected))
  }

  /// The three-way merge `ccsync edit` does: both sides diff against the same base.
  @Test func threeWayMergeFromACommonBase() throws {
    let ours = JSONChangeSet(from: Self.base, to: Self.target)
    var theirTarget = Self.base
    theirTarget = JSONChangeSet([.set(path: ["window", "width"], value: 640), .set(path: ["fontSize"], value: 15)])
      .applied(to: theirTarget)
    let theirs = JSONChangeSet(from: Self.base, to: theirTarget)
    #expect(ours.conflicts(with: theirs) == [JSONPath(tokens: ["window", "width"])])
    let merged = ours.applied(to: theirTarget)
    #expect(try merged.value(at: JSONPath(parsing: "window.width")) == 1024)
    #expect(try merged.value(at: JSONPath(parsing: "fontSize")) == 15)
  }
}

// MARK: - Randomized

@Suite struct JSONChangeSetRandomTests {
  /// Checks that `result` keeps `base`'s order for the members `target` kept and has
  /// `target`'s new members after them, in `target`'s order, in every object all three share.
  func expectOrder(_ result: JSONValue, base: JSONValue, target: JSONValue, seed: UInt64) {
    guard let result = result.objectValue, let base = base.objectValue, let target = target.objectValue
    else { return }
    let kept = base.keys.filter { target.position(of: $0) != nil }
    let added = target.keys.filter { base.position(of: $0) == nil }
    #expect(result.keys == kept + added, "seed \(seed)")
    for member in result {
      if let baseValue = base[member.key], let targetValue = target[member.key] {
        expectOrder(member.value, base: baseValue, target: targetValue, seed: seed)
      }
    }
  }

  @Test func differenceThenApplyGivesTheTarget() {
    for seed in UInt64(0)..<300 {
      var random = SeededJSONRandom(seed: seed)
      let base = random.object(depth: 3)
      var target = base
      for _ in 0..<Int.random(in: 0...6, using: &random) { _ = random.mutate(&target) }
      let changes = JSONChangeSet(from: base, to: target)
      let result = changes.applied(to: base)
      #expect(result == target, "seed \(seed)")
      #expect(changes.isEmpty == (base == target), "seed \(seed)")
      expectOrder(result, base: base, target: target, seed: seed)
      // Unrelated documents too: one set of the root, or per-member changes.
      let other = random.value(depth: 3)
      #expect(JSONChangeSet(from: base, to: other).applied(to: base) == other, "seed \(seed)")
      #expect(JSONChangeSet(from: other, to: base).applied(to: other) == base, "seed \(seed)")
    }
  }

  /// When two processes change different fields of the same base, applying one's change set
  /// to the other's document holds both, in either order, and nothing conflicts.
  @Test func disjointChangesMergeThreeWays() throws {
    for seed in UInt64(0)..<300 {
      var random = SeededJSONRandom(seed: seed)
      let base = random.object(depth: 3)
      var ours = base
      var ourPaths: [[String]] = []
      for _ in 0..<Int.random(in: 1...4, using: &random) {
        if let path = random.mutate(&ours) { ourPaths.append(path) }
      }
      var theirs = base
      for _ in 0..<Int.random(in: 1...4, using: &random) {
        _ = random.mutate(&theirs, avoiding: ourPaths)
      }
      let ourChanges = JSONChangeSet(from: base, to: ours)
      let theirChanges = JSONChangeSet(from: base, to: theirs)
      #expect(ourChanges.conflicts(with: theirChanges).isEmpty, "seed \(seed)")
      let merged = ourChanges.applied(to: theirs)
      #expect(merged == theirChanges.applied(to: ours), "seed \(seed)")
      for change in ourChanges.changes + theirChanges.changes {
        let value = try merged.value(at: JSONPath(tokens: change.path))
        switch change {
        case .set(_, let expected): #expect(value == expected, "seed \(seed) \(change)")
        case .remove: #expect(value == nil, "seed \(seed) \(change)")
        }
      }
    }
  }

  /// Changes from the same base conflict exactly when the order of applying them matters.
  @Test func conflictsAreExactlyTheOrderDependentMerges() {
    var conflicting = 0
    for seed in UInt64(0)..<400 {
      var random = SeededJSONRandom(seed: seed)
      let base = random.object(depth: 2)
      var ours = base
      var theirs = base
      for _ in 0..<Int.random(in: 1...3, using: &random) { _ = random.mutate(&ours) }
      for _ in 0..<Int.random(in: 1...3, using: &random) { _ = random.mutate(&theirs) }
      let ourChanges = JSONChangeSet(from: base, to: ours)
      let theirChanges = JSONChangeSet(from: base, to: theirs)
      let conflicts = ourChanges.conflicts(with: theirChanges)
      let oursLast = ourChanges.applied(to: theirs)
      let theirsLast = theirChanges.applied(to: ours)
      #expect(conflicts.isEmpty == (oursLast == theirsLast), "seed \(seed) \(conflicts)")
      #expect(Set(conflicts) == Set(theirChanges.conflicts(with: ourChanges)), "seed \(seed)")
      if !conflicts.isEmpty { conflicting += 1 }
    }
    // The generator must produce both kinds, or the test proves nothing.
    #expect(conflicting > 40 && conflicting < 360, "\(conflicting) of 400 conflict")
  }

  /// `a.merging(b)` does what `a` then `b` do, on any document.
  @Test func mergingIsSequentialApplication() {
    for seed in UInt64(0)..<300 {
      var random = SeededJSONRandom(seed: seed)
      let first = random.object(depth: 3)
      var second = first
      var third = first
      for _ in 0..<3 { _ = random.mutate(&second) }
      third = second
      for _ in 0..<3 { _ = random.mutate(&third) }
      let earlier = JSONChangeSet(from: first, to: second)
      let later = JSONChangeSet(from: second, to: third)
      #expect(earlier.merging(later).applied(to: first) == third, "seed \(seed)")
      let unrelated = random.object(depth: 3)
      #expect(
        earlier.merging(later).applied(to: unrelated) == later.applied(to: earlier.applied(to: unrelated)),
        "seed \(seed)")
    }
  }
}
