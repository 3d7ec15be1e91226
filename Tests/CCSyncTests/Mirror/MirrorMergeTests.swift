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
}
