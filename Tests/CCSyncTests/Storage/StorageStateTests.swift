import Testing
@testable import CCSync
import CCSyncJSON

/// The storage layer's merge and ordering rules on their own: ``StorageState``'s pure
/// functions (docs/ARCHITECTURE.md, "Merging" and "Versions and ranks"). No files, no threads.
@Suite struct StorageStateTests {
  private struct Settings: Codable, Equatable {
    var theme = "light"
    var size = 13
  }

  private let coding = ValueCoding<Settings>(
    encoder: JSONValueEncoder(), decoder: JSONValueDecoder(), encodedDefault: ["theme": "light", "size": 13], path: "test")

  private func synced(_ settings: Settings = Settings()) -> StorageState<Settings> {
    let encoded = try! coding.encode(settings)
    return StorageState(value: settings, encodedValue: encoded, synced: encoded)
  }

  private func incoming(
    _ json: JSONValue, rank: UInt64?, saved: StorageState<Settings>.SavedEdits? = nil
  ) -> (StorageState<Settings>.IncomingVersion, Result<Settings, StorageError>) {
    let source = coding.decodingSource(json)
    let decoded = Result { () throws(StorageError) in try coding.decode(source: source) }
    return (StorageState.IncomingVersion(json: json, source: source, rank: rank.map { VersionTracking.Rank(generation: $0) }, saved: saved), decoded)
  }

  @Test func aReloadKeepsPendingEditsOnTop() throws {
    var state = synced()
    #expect(try state.edit(to: Settings(theme: "mine", size: 13), encoded: ["theme": "mine", "size": 13], from: nil, coding))
    let (version, decoded) = incoming(["theme": "light", "size": 20], rank: 1)
    guard case .taken(changed: true) = state.adopt(version, decoded: decoded, coding: coding) else {
      Issue.record("not taken")
      return
    }
    #expect(state.value == Settings(theme: "mine", size: 20))
    #expect(state.pendingChanges == JSONChangeSet(from: ["theme": "light", "size": 20], to: ["theme": "mine", "size": 20]))
  }

  @Test func anOlderVersionIsNeverTaken() {
    var state = synced()
    let (newer, newerDecoded) = incoming(["theme": "new", "size": 13], rank: 5)
    _ = state.adopt(newer, decoded: newerDecoded, coding: coding)
    let (older, olderDecoded) = incoming(["theme": "old", "size": 13], rank: 4)
    guard case .ignored = state.adopt(older, decoded: olderDecoded, coding: coding) else {
      Issue.record("an older version was taken")
      return
    }
    #expect(state.value.theme == "new")
  }

  @Test func anOutrankedSaveResultSettlesItsEditsAndKeepsLaterOnes() throws {
    var state = synced()
    _ = try state.edit(to: Settings(theme: "mine", size: 13), encoded: ["theme": "mine", "size": 13], from: nil, coding)
    let (_, saved, _) = try state.startWrite(coding)
    // Another process wrote over the save, and a reload took that version first, still with
    // the save's edit pending on top; meanwhile this process edited another field.
    let (theirs, theirsDecoded) = incoming(["theme": "theirs", "size": 13], rank: 7)
    _ = state.adopt(theirs, decoded: theirsDecoded, coding: coding)
    #expect(state.value.theme == "mine")
    _ = try state.edit(to: Settings(theme: "mine", size: 20), encoded: ["theme": "mine", "size": 20], from: nil, coding)
    let (result, resultDecoded) = incoming(["theme": "mine", "size": 13], rank: 6, saved: saved)
    guard case .settledOutrankedSave(changed: true) = state.adopt(result, decoded: resultDecoded, coding: coding) else {
      Issue.record("the late save result was not settled")
      return
    }
    #expect(state.value == Settings(theme: "theirs", size: 20), "the later write wins its field; the edit made since stays")
    #expect(state.pendingChanges == JSONChangeSet(from: ["theme": "theirs", "size": 13], to: ["theme": "theirs", "size": 20]))
  }

  @Test func anUnreadableWriteResultSettlesItsEdits() throws {
    var state = synced()
    _ = try state.edit(to: Settings(theme: "mine", size: 13), encoded: ["theme": "mine", "size": 13], from: nil, coding)
    let (_, saved, _) = try state.startWrite(coding)
    let (result, decoded) = incoming(["theme": "mine", "size": "not a number"], rank: 3, saved: saved)
    guard case .unreadable = state.adopt(result, decoded: decoded, coding: coding) else {
      Issue.record("an undecodable version was taken")
      return
    }
    #expect(state.value.theme == "mine", "the value stays")
    #expect(!state.hasPendingChanges, "the written edits are no longer pending")
    #expect(state.fileState != .valid)
    #expect(state.adoptedRank == VersionTracking.Rank(generation: 3))
  }

  @Test func anInPlaceEditOnAMovedValueAppliesOnlyItsOwnFields() throws {
    var state = synced()
    let base = try state.encodings(coding).value
    let (reloaded, decoded) = incoming(["theme": "theirs", "size": 13], rank: 1)
    _ = state.adopt(reloaded, decoded: decoded, coding: coding)
    // The edit started from the old value and changed only the size.
    #expect(try state.edit(to: Settings(theme: "light", size: 20), encoded: ["theme": "light", "size": 20], from: base, coding))
    #expect(state.value == Settings(theme: "theirs", size: 20), "the reloaded theme is not reverted")
  }

  /// What a failed read tells: a version that does not decode makes the state `.invalid`; a
  /// store that could not be asked says nothing of the document, so the state stays, unless
  /// nothing is known yet (the first read, or still `.unknown`, whose message then says what
  /// failed last).
  @Test func aFailedReadTellsOnlyWhatItLearned() {
    let unreachable = StorageError.store(.unreachable("no member answered"))
    let againUnreachable = StorageError.store(.unreachable("still no member"))
    let undecodable = StorageError.decodingFailed(path: "test", message: "size: not a number")

    var state = synced()
    state.readFailed(unreachable, atStart: false)
    #expect(state.fileState == .valid, "an unreachable store says nothing of the document")
    state.readFailed(unreachable, atStart: true)
    #expect(state.fileState == .unknown(unreachable.description), "the first read knows nothing")
    state.readFailed(againUnreachable, atStart: false)
    #expect(state.fileState == .unknown(againUnreachable.description), "still nothing known: the latest failure")
    state.readFailed(undecodable, atStart: false)
    #expect(state.fileState == .invalid(undecodable.description))
    state.readFailed(unreachable, atStart: false)
    #expect(state.fileState == .invalid(undecodable.description), "the last look's verdict stays")
  }
}
