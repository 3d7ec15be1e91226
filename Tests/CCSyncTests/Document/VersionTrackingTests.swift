import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncSystem

/// The document layer's ordering rules on their own: ``VersionTracking``'s pure functions and
/// the racing-read policy (docs/ARCHITECTURE.md, "Versions and ranks"). No files, no threads.
@Suite struct VersionTrackingTests {

  private func version(_ text: String, inode: UInt64) -> StoredVersion {
    let time = FileIdentity.Timestamp(seconds: 900, nanoseconds: 0)
    let identity = FileIdentity(device: 1, inode: inode, size: Int64(text.utf8.count), modificationTime: time, statusChangeTime: time)
    return StoredVersion(bytes: Array(text.utf8), identity: VersionIdentity(FileVersion(identity, seenAt: time)))
  }

  private func parsed(_ text: String) -> VersionTracking.ParsedVersion {
    VersionTracking.ParsedVersion(document: try! JSONValue(parsing: Array(text.utf8)))
  }

  @Test func aReadThatRacedIsNotRecordedUntilItsLastAttempt() {
    var tracking = VersionTracking()
    let start = tracking.readStart
    _ = tracking.beginWrite(Array("{}".utf8))  // a write of this process started meanwhile
    let older = version(#"{"a": 1}"#, inode: 1)
    #expect(tracking.recordRead(older, parsed(#"{"a": 1}"#), since: start, isLastAttempt: false) == nil)
    #expect(tracking.seen == nil)
    let rank = tracking.recordRead(older, parsed(#"{"a": 1}"#), since: start, isLastAttempt: true)
    #expect(rank == VersionTracking.Rank(generation: 2))
    #expect(tracking.seen?.bytes == older.bytes)
  }

  @Test func ranksGrowInTheOrderVersionsAreRecorded() {
    var tracking = VersionTracking()
    let first = tracking.recordRead(version("1", inode: 1), parsed("1"), since: tracking.readStart, isLastAttempt: false)
    let started = tracking.beginWrite(Array("2".utf8))
    let written = tracking.finishWrite(
      Array("2".utf8), identity: version("2", inode: 2).identity, document: 2, layout: nil,
      replacing: version("1", inode: 1), started: started)
    #expect(first != nil)
    #expect(first! < VersionTracking.Rank(generation: written.generation))
    #expect(VersionTracking.Rank(generation: written.generation, position: 0) < VersionTracking.Rank(generation: written.generation, position: 1))
  }

  /// A problem is news once per version and reason: the same version read again keeps its
  /// mark (a file's same bytes under a moved identity included), another version, even of
  /// the same text in an ordered store, starts unmarked.
  /// ``VersionTracking/marksReported(_:)``, callable inside `#expect`.
  private func marks(_ tracking: inout VersionTracking, _ reason: String) -> Bool {
    tracking.marksReported(reason)
  }

  @Test func aProblemIsReportedOncePerVersion() {
    var tracking = VersionTracking()
    let refused = version(#"{"port": 70000}"#, inode: 1)
    _ = tracking.recordRead(refused, parsed(#"{"port": 70000}"#), since: tracking.readStart, isLastAttempt: false)
    #expect(marks(&tracking, "refused"))
    #expect(!marks(&tracking, "refused"), "the same version, the same reason")
    #expect(marks(&tracking, "refused otherwise"), "the same version, another reason")
    #expect(marks(&tracking, "refused"))
    let moved = version(#"{"port": 70000}"#, inode: 2)  // the same text, renamed in
    _ = tracking.recordRead(moved, parsed(#"{"port": 70000}"#), since: tracking.readStart, isLastAttempt: false)
    #expect(!marks(&tracking, "refused"), "a file's same bytes are the same version")
    let another = version(#"{"port": 70001}"#, inode: 3)
    _ = tracking.recordRead(another, parsed(#"{"port": 70001}"#), since: tracking.readStart, isLastAttempt: false)
    #expect(marks(&tracking, "refused"), "another version")

    var ordered = VersionTracking()
    let bytes = Array("{oops".utf8)
    let failure = StorageError.rejected(path: "k", reasons: ["refused"])
    _ = ordered.observe(
      StoredVersion(bytes: bytes, identity: .ordered(1)), sameBytes: false, parsed: .failure(failure), since: ordered.readStart,
      isLastAttempt: false)
    #expect(marks(&ordered, "invalid"))
    _ = ordered.observe(
      StoredVersion(bytes: bytes, identity: .ordered(1)), sameBytes: true, parsed: nil, since: ordered.readStart, isLastAttempt: false)
    #expect(!marks(&ordered, "invalid"), "the same revision read again")
    _ = ordered.observe(
      StoredVersion(bytes: bytes, identity: .ordered(2)), sameBytes: true, parsed: nil, since: ordered.readStart, isLastAttempt: false)
    #expect(marks(&ordered, "invalid"), "a new revision of the same text is another version")
  }

  @Test func ownWriteIsNeverAnotherProcessChange() {
    var tracking = VersionTracking()
    let bytes = Array(#"{"mine": true}"#.utf8)
    _ = tracking.beginWrite(bytes)
    let found = StoredVersion(bytes: bytes, identity: version(#"{"mine": true}"#, inode: 7).identity)
    let outcome = tracking.observe(
      found, sameBytes: false, parsed: .success(parsed(#"{"mine": true}"#)), since: tracking.readStart, isLastAttempt: false)
    guard case (.unchanged, nil)? = outcome else {
      Issue.record("own write reported as \(String(describing: outcome))")
      return
    }
  }

  @Test func aWriteKeepsANewerVersionRecordedWhileItWasUnderWay() {
    var tracking = VersionTracking()
    let replaced = version("1", inode: 1)
    _ = tracking.recordRead(replaced, parsed("1"), since: tracking.readStart, isLastAttempt: false)
    let started = tracking.beginWrite(Array("2".utf8))
    // A writer that ignores the lock put "3" in place after this write's rename, and a reader
    // recorded it first.
    let newer = version("3", inode: 3)
    _ = tracking.recordRead(newer, parsed("3"), since: tracking.readStart, isLastAttempt: false)
    let result = tracking.finishWrite(
      Array("2".utf8), identity: version("2", inode: 2).identity, document: 2, layout: nil,
      replacing: replaced, started: started)
    #expect(result.generation == started, "the write ranks before the newer version")
    #expect(tracking.seen?.bytes == newer.bytes, "the newer version stays recorded")
  }

  /// The version a write replaces can change identity under it without changing a byte: the
  /// history's link of it raises its link count and so its `ctime`. A reader that records it
  /// then, between the link and the rename, has recorded the version replaced, not a newer
  /// one: the write ranks after it (ranked before, the storage took the older version's field
  /// back over its own write, and no event was left to correct it).
  private func relinked(_ text: String, inode: UInt64) -> StoredVersion {
    let time = FileIdentity.Timestamp(seconds: 900, nanoseconds: 0)
    let linkedAt = FileIdentity.Timestamp(seconds: 901, nanoseconds: 0)
    let identity = FileIdentity(device: 1, inode: inode, size: Int64(text.utf8.count), modificationTime: time, statusChangeTime: linkedAt)
    return StoredVersion(bytes: Array(text.utf8), identity: VersionIdentity(FileVersion(identity, seenAt: linkedAt)))
  }

  @Test func aWriteRanksAfterTheVersionItReplacedRecordedUnderANewIdentity() {
    var tracking = VersionTracking()
    _ = tracking.recordRead(version("0", inode: 1), parsed("0"), since: tracking.readStart, isLastAttempt: false)
    let replaced = version("1", inode: 2)  // another process's write, found by this write's read
    let started = tracking.beginWrite(Array("2".utf8))
    let linked = relinked("1", inode: 2)
    #expect(linked.identity != replaced.identity)
    let outcome = tracking.observe(
      linked, sameBytes: false, parsed: .success(parsed("1")), since: tracking.readStart, isLastAttempt: false)
    guard case (.changed, let readRank?)? = outcome else {
      Issue.record("the replaced version was not recorded: \(String(describing: outcome))")
      return
    }
    let result = tracking.finishWrite(
      Array("2".utf8), identity: version("2", inode: 3).identity, document: 2, layout: nil,
      replacing: replaced, started: started)
    #expect(readRank < VersionTracking.Rank(generation: result.generation), "the write ranks before the version it replaced")
    #expect(tracking.seen?.bytes == Array("2".utf8))
  }

  @Test func aVersionLeftInPlaceRanksBeforeOneRecordedSinceTheRead() {
    var tracking = VersionTracking()
    let before = tracking.generation
    let other = version("other", inode: 9)
    _ = tracking.recordRead(other, parsed("\"other\""), since: tracking.readStart, isLastAttempt: false)
    let left = tracking.recordLeft(version("left", inode: 8), document: "left", layout: nil, generationBeforeRead: before)
    #expect(left.generation == before)
    #expect(tracking.seen?.bytes == other.bytes)

    var quiet = VersionTracking()
    let quietBefore = quiet.generation
    let recorded = quiet.recordLeft(version("left", inode: 8), document: "left", layout: nil, generationBeforeRead: quietBefore)
    #expect(recorded.generation == quietBefore + 1, "nothing recorded since the read: the version left is the newest")
    #expect(quiet.seen?.bytes == Array("left".utf8))
  }

  @Test func aVanishedDocumentIsMissingOnlyAfterAVersionWasSeen() {
    var tracking = VersionTracking()
    #expect(tracking.observeMissing(since: tracking.readStart, isLastAttempt: false) == .unchanged)
    _ = tracking.recordRead(version("1", inode: 1), parsed("1"), since: tracking.readStart, isLastAttempt: false)
    #expect(tracking.observeMissing(since: tracking.readStart, isLastAttempt: false) == .missing)
    #expect(tracking.seen == nil)
  }

  @Test func theRacingReadPolicyMakesFourAttemptsAndFlagsTheLast() {
    var flags: [Bool] = []
    let result = RacingReadPolicy.run(fallback: -1) { isLastAttempt -> Int? in
      flags.append(isLastAttempt)
      return isLastAttempt ? 4 : nil
    }
    #expect(result == 4)
    #expect(flags == [false, false, false, true])
    #expect(RacingReadPolicy.run(fallback: -1) { _ -> Int? in nil } == -1)
  }
}

extension SharedDocument.Observation: Equatable {
  public static func == (lhs: Self, rhs: Self) -> Bool {
    switch (lhs, rhs) {
    case (.unchanged, .unchanged), (.missing, .missing): true
    case (.changed(let a), .changed(let b)): a == b
    case (.invalid(let a), .invalid(let b)): a.description == b.description
    default: false
    }
  }
}
