import Testing
@testable import CCSync
import CCSyncJSON

/// The mirror's three-way merge on its own (docs/ARCHITECTURE.md, "The mirror"): no files,
/// no cluster.
@Suite struct MirrorMergeTests {
  @Test func eachSideGetsOnlyWhatTheOtherChanged() {
    let merge = MirrorMerge(
      agreed: ["a": 1, "b": 1, "c": 1], file: ["a": 2, "b": 1, "c": 1], key: ["a": 1, "b": 3, "c": 1])
    #expect(merge.merged == ["a": 2, "b": 3, "c": 1])
    #expect(merge.toKey == JSONChangeSet(from: ["a": 1, "b": 3, "c": 1], to: ["a": 2, "b": 3, "c": 1]))
    #expect(merge.toFile == JSONChangeSet(from: ["a": 2, "b": 1, "c": 1], to: ["a": 2, "b": 3, "c": 1]))
    #expect(merge.conflicts.isEmpty)
  }

  @Test func aFieldBothSidesChangedTakesTheKeysValueAndNamesWhatLost() {
    let merge = MirrorMerge(agreed: ["theme": "light", "size": 1], file: ["theme": "dark", "size": 2], key: ["theme": "blue", "size": 1])
    #expect(merge.merged == ["theme": "blue", "size": 2])
    #expect(merge.conflicts == [MirrorMerge.Conflict(path: JSONPath(tokens: ["theme"]), lostValue: "dark")])
    #expect(JSONChangeSet(from: ["theme": "blue", "size": 1], to: merge.merged) == merge.toKey)
  }

  @Test func theSameChangeOnBothSidesIsNoConflict() {
    let merge = MirrorMerge(agreed: ["a": 1], file: ["a": 2], key: ["a": 2])
    #expect(merge.conflicts.isEmpty)
    #expect(merge.toFile.isEmpty && merge.toKey.isEmpty)
    #expect(merge.merged == ["a": 2])
  }

  @Test func nestedFieldsMergeAndKeysNobodyKnowsSurvive() {
    let agreed: JSONValue = ["server": ["host": "a", "port": 1], "extra": true]
    let file: JSONValue = ["server": ["host": "b", "port": 1], "extra": true, "local": 1]
    let key: JSONValue = ["server": ["host": "a", "port": 2], "extra": true, "remote": 2]
    let merge = MirrorMerge(agreed: agreed, file: file, key: key)
    #expect(merge.merged == ["server": ["host": "b", "port": 2], "extra": true, "local": 1, "remote": 2])
    #expect(merge.toFile.applied(to: file) == merge.merged)
    #expect(merge.toKey.applied(to: key) == merge.merged)
  }

  /// A restart after a crash between the key's write and the history's: both sides already
  /// hold the change; the merge finds nothing to do and reverts nothing.
  @Test func aMergeFromAnOlderAgreedVersionConvergesWithoutReverting() {
    let merge = MirrorMerge(agreed: ["n": 1, "m": 1], file: ["n": 2, "m": 1], key: ["n": 2, "m": 5])
    #expect(merge.merged == ["n": 2, "m": 5])
    #expect(merge.toKey.isEmpty)
    #expect(merge.conflicts.isEmpty)
  }

  @Test func aRemovedFieldIsRemovedOnTheOtherSideAndARemovalThatLostIsNamed() {
    let removed = MirrorMerge(agreed: ["a": 1, "b": 1], file: ["a": 1], key: ["a": 1, "b": 1])
    #expect(removed.merged == ["a": 1])
    let lost = MirrorMerge(agreed: ["a": 1], file: [:], key: ["a": 2])
    #expect(lost.merged == ["a": 2])
    #expect(lost.conflicts == [MirrorMerge.Conflict(path: JSONPath(tokens: ["a"]), lostValue: nil)])
  }

  // MARK: After a sync that was interrupted between its writes

  /// The sync that was killed: agreed n = 1, k = 1; the file had n = 2, the key k = 2; it
  /// was making both {n: 2, k: 2}.
  private let interrupted = MirrorHistory.Pending(merged: ["n": 2, "k": 2], file: ["n": 2, "k": 1], key: ["n": 1, "k": 2])

  /// Killed after the key got n = 2, before the file got k = 2; a local writer then set
  /// n = 3. From the agreed version the key's n = 2 would look like the key's change and win.
  @Test func aValueTheKilledSyncPushedIsNoChangeOfTheKey() {
    let merge = MirrorMerge(interrupted: interrupted, file: ["n": 3, "k": 1], key: ["n": 2, "k": 2])
    #expect(merge.merged == ["n": 3, "k": 2])
    #expect(merge.conflicts.isEmpty)
    #expect(merge.toKey == JSONChangeSet(from: ["n": 2, "k": 2], to: ["n": 3, "k": 2]))
    #expect(merge.toFile == JSONChangeSet(from: ["n": 3, "k": 1], to: ["n": 3, "k": 2]))
  }

  /// Killed after both writes, before the record; a local writer then set the received k.
  @Test func aValueTheKilledSyncBroughtInIsNoChangeOfTheFile() {
    let merge = MirrorMerge(interrupted: interrupted, file: ["n": 2, "k": 3], key: ["n": 2, "k": 2])
    #expect(merge.merged == ["n": 2, "k": 3])
    #expect(merge.conflicts.isEmpty)
  }

  /// Killed before any write: the sides are as the sync read them, and the merge is its plan.
  @Test func killedBeforeAnyWriteTheMergeIsThePlan() {
    let merge = MirrorMerge(interrupted: interrupted, file: ["n": 2, "k": 1], key: ["n": 1, "k": 2])
    #expect(merge.merged == ["n": 2, "k": 2])
    #expect(merge.conflicts.isEmpty)
  }

  /// The key changed the pushed value again after the killed sync, and the file did too: a
  /// conflict like any other, which the key wins.
  @Test func laterChangesOnBothSidesStillConflict() {
    let merge = MirrorMerge(interrupted: interrupted, file: ["n": 3, "k": 2], key: ["n": 5, "k": 2])
    #expect(merge.merged == ["n": 5, "k": 2])
    #expect(merge.conflicts == [MirrorMerge.Conflict(path: JSONPath(tokens: ["n"]), lostValue: 3)])
  }

  /// The file was missing when the killed sync read it (it was copying the key): the file
  /// created since counts as changed from the key's version.
  @Test func aSideThatWasMissingCountsFromThePlan() {
    let copying = MirrorHistory.Pending(merged: ["a": 1], file: nil, key: ["a": 1])
    let merge = MirrorMerge(interrupted: copying, file: ["a": 1, "b": 2], key: ["a": 1])
    #expect(merge.merged == ["a": 1, "b": 2])
    #expect(merge.toFile.isEmpty)
  }
}
