import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncSystem

/// The mirror's rules (docs/SEMANTICS.md, "Mirror") on two documents kept in memory, its
/// record and its conflict copies in memory too: no files, no inotify, no cluster. Part of the
/// fast tier (`scripts/test --fast`); the process tests (Tests/CCSyncTests/Mirror/) run the
/// same rules through `ccsync mirror` on files and etcd.
@Suite struct InMemoryMirrorTests {
  /// A file side and a key side kept in memory, the pair's record and conflict copies, and
  /// the lines its mirrors log. Each ``start(preference:gate:)`` is a new process: new
  /// documents over the same stores and the same record.
  final class Pair: Sendable {
    let fileStore: MemoryStore
    let keyStore: MemoryStore
    let record = MemoryMirrorRecord()
    let copies: MemoryConflictCopies
    private let logged = Protected<[String]>([])

    init(file: String? = nil, key: String? = nil) {
      fileStore = MemoryStore(name: "host/app.json", text: file)
      keyStore = MemoryStore(name: "etcd/app", text: key)
      copies = MemoryConflictCopies(fileName: fileStore.name, keyName: keyStore.name)
    }

    /// Starts a mirror of the pair and waits until its first sync has been tried.
    func start(preference: DocumentMirror.Preference = .key, gate: DocumentGate = .standard) throws -> DocumentMirror {
      let logger = DiagnosticLog { [logged] level, message in logged.withLock { $0.append("\(level): \(message)") } }
      let mirror = DocumentMirror(
        file: SharedDocument(store: fileStore, gate: gate), key: SharedDocument(store: keyStore, gate: gate), history: record,
        conflictCopies: copies, preference: preference, logger: logger)
      let tried = Protected(false)
      try mirror.start(firstSync: { tried.withLock { $0 = true } })
      #expect(waitUntil(deadline: .seconds(30)) { tried.withLock { $0 } }, "the first sync was never tried: \(lines)")
      return mirror
    }

    var file: JSONValue? { Pair.value(fileStore.text) }
    var key: JSONValue? { Pair.value(keyStore.text) }
    var lines: [String] { logged.withLock { $0 } }

    func lines(containing text: String) -> [String] {
      lines.filter { $0.contains(text) }
    }

    /// Waits until both sides hold `value`.
    func waitUntilBoth(_ value: JSONValue) -> Bool {
      waitUntil(deadline: .seconds(30)) { file == value && key == value }
    }

    /// The text of every version `store` has held, the current one first.
    static func texts(of store: MemoryStore) throws -> [String] {
      try store.versions(limit: nil).compactMap { version in
        try store.contents(ofVersion: version.id).map { String(decoding: $0, as: UTF8.self) }
      }
    }

    /// Every version `store` has held, parsed where it parses.
    static func history(of store: MemoryStore) throws -> [JSONValue] {
      try texts(of: store).compactMap { value($0) }
    }

    static func value(_ text: String?) -> JSONValue? {
      text.flatMap { try? JSONValue(parsing: Array($0.utf8)) }
    }
  }

  /// The first run copies the only side that exists to the other; after that a change on
  /// either side reaches the other, and what the pair agreed on is recorded.
  @Test func aChangeOnEitherSideReachesTheOther() throws {
    let pair = Pair(file: #"{"name": "app", "port": 1}"#)
    let mirror = try pair.start()
    defer { mirror.stop() }
    #expect(pair.key == ["name": "app", "port": 1], "only the file existed: the key is created from it")
    pair.fileStore.put(#"{"name": "app", "port": 2}"#)
    #expect(pair.waitUntilBoth(["name": "app", "port": 2]), "the file's change: \(String(describing: pair.key))")
    pair.keyStore.put(#"{"name": "web", "port": 2}"#)
    #expect(pair.waitUntilBoth(["name": "web", "port": 2]), "the key's change: \(String(describing: pair.file))")
    // The record is saved after both sides are written: waited for, not raced.
    #expect(
      waitUntil(deadline: .seconds(30)) { pair.record.record == MirrorHistory.Record(agreed: ["name": "web", "port": 2]) },
      "\(pair.record.record)")

    let keyOnly = Pair(key: #"{"only": "key"}"#)
    let second = try keyOnly.start()
    defer { second.stop() }
    #expect(keyOnly.file == ["only": "key"], "only the key existed: the file is created from it")
    #expect(pair.lines.isEmpty && keyOnly.lines.isEmpty, "nothing to report: \(pair.lines + keyOnly.lines)")
  }

  /// What each side changed while no mirror ran is merged field by field: every change
  /// survives, a field both changed takes the key's value, and one line names the field and
  /// the file's value that lost.
  @Test func bothSidesChangingDifferentFieldsMergeAndTheKeyWinsAFieldBothChanged() throws {
    let pair = Pair(file: #"{"x": 1, "y": 1, "z": 1}"#)
    let before = try pair.start()
    before.stop()
    #expect(pair.record.record == MirrorHistory.Record(agreed: ["x": 1, "y": 1, "z": 1]))
    pair.fileStore.put(#"{"x": 2, "y": 2, "z": 1}"#)
    pair.keyStore.put(#"{"x": 3, "y": 1, "z": 3}"#)
    let after = try pair.start()
    defer { after.stop() }
    #expect(pair.waitUntilBoth(["x": 3, "y": 2, "z": 3]), "file \(String(describing: pair.file)), key \(String(describing: pair.key))")
    let conflicts = pair.lines(containing: "changed on both sides")
    #expect(conflicts.count == 1, "\(pair.lines)")
    #expect(conflicts.first?.contains("'x'") == true && conflicts.first?.contains("2 lost") == true, "\(conflicts)")
    #expect(pair.copies.copies.withLock(\.isEmpty), "with history nothing is kept aside")
  }

  /// Deletions are not mirrored: a deleted key is created again from the file, a deleted file
  /// again from the key (once it has stayed missing for the grace, its store standing for a
  /// file that may show a write part done).
  @Test func aDeletedSideIsCreatedAgainFromTheOther() throws {
    let pair = Pair(file: #"{"a": 1}"#)
    pair.fileStore.partialWrites.withLock { $0 = .possible }
    let mirror = try pair.start()
    defer { mirror.stop() }
    #expect(pair.key == ["a": 1])
    pair.keyStore.remove()
    #expect(waitUntil(deadline: .seconds(30)) { pair.key == ["a": 1] }, "the deleted key was not created again")
    pair.fileStore.remove()
    #expect(waitUntil(deadline: .seconds(30)) { pair.file == ["a": 1] }, "the deleted file was not created again")
    #expect(pair.lines.isEmpty, "\(pair.lines)")
  }

  /// A first run that finds both sides different takes the preferred side and keeps the
  /// other's version as a conflict copy, named in a line; equal sides are left alone.
  @Test(arguments: [DocumentMirror.Preference.key, .file])
  func aFirstRunTakesThePreferredSideAndKeepsTheOther(preference: DocumentMirror.Preference) throws {
    let pair = Pair(file: #"{"from": "file"}"#, key: #"{"from": "key"}"#)
    let mirror = try pair.start(preference: preference)
    defer { mirror.stop() }
    let (winner, loser, loserName): (JSONValue, JSONValue, String) =
      preference == .key ? (["from": "key"], ["from": "file"], pair.fileStore.name) : (["from": "file"], ["from": "key"], pair.keyStore.name)
    #expect(pair.waitUntilBoth(winner), "file \(String(describing: pair.file)), key \(String(describing: pair.key))")
    let copies = pair.copies.copies.withLock { $0 }
    #expect(copies.count == 1, "\(copies)")
    #expect(copies.first?.name.hasPrefix(loserName + ".conflict-") == true, "\(copies)")
    #expect(Pair.value(copies.first?.text) == loser, "the losing side's version kept")
    #expect(pair.lines(containing: copies.first?.name ?? "(no copy)").count == 1, "one line names the copy: \(pair.lines)")

    let equal = Pair(file: #"{"same": true}"#, key: #"{"same": true}"#)
    let quiet = try equal.start(preference: preference)
    defer { quiet.stop() }
    #expect(try equal.fileStore.versions(limit: nil).count == 1 && equal.keyStore.versions(limit: nil).count == 1, "equal sides are not written")
    #expect(equal.copies.copies.withLock(\.isEmpty) && equal.lines.isEmpty, "\(equal.lines)")
  }

  /// A side that is not valid JSON is reported once, however many syncs find it, and nothing
  /// is synced while it is: it is not overwritten and the other side keeps its own version.
  /// Once valid, both sides' changes merge and the mirror says it is in sync again.
  @Test(arguments: [true, false])
  func anInvalidSideIsReportedOnceAndNothingSyncsUntilItIsValid(invalidFile: Bool) throws {
    let pair = Pair(file: #"{"a": 1}"#)
    let mirror = try pair.start()
    defer { mirror.stop() }
    let (invalid, other) = invalidFile ? (pair.fileStore, pair.keyStore) : (pair.keyStore, pair.fileStore)
    invalid.put("{oops")
    #expect(waitUntil(deadline: .seconds(30)) { !pair.lines(containing: "not mirrored until it is valid").isEmpty }, "\(pair.lines)")
    // A change on the other side starts a sync, which finds the invalid side again: the
    // read shows that sync ran (only syncs read the invalid side here).
    for round in 2...3 {
      let reads = invalid.reads
      other.put(#"{"a": \#(round)}"#)
      #expect(waitUntil(deadline: .seconds(30)) { invalid.reads > reads }, "no sync after the other side changed")
    }
    #expect(invalid.text == "{oops", "the invalid side was written over")
    #expect(Pair.value(other.text) == ["a": 3], "the other side lost its own change")
    invalid.put(#"{"a": 1, "b": 1}"#)
    #expect(pair.waitUntilBoth(["a": 3, "b": 1]), "file \(String(describing: pair.file)), key \(String(describing: pair.key))")
    #expect(waitUntil(deadline: .seconds(30)) { !pair.lines(containing: "in sync again").isEmpty }, "\(pair.lines)")
    #expect(pair.lines(containing: "not mirrored until it is valid").count == 1, "reported once: \(pair.lines)")
    #expect(try !Pair.texts(of: other).contains("{oops"), "the invalid version crossed")
  }

  /// A gate that refuses a document whose `port` is not a TCP port.
  static let portGate = DocumentGate { document, _ in
    guard case .number(let port)? = document.objectValue?["port"], let value = port.int64Value, (1...65535).contains(value) else {
      throw DocumentGate.Refusal("the port is out of range")
    }
  }

  /// A version the gate refuses, written on either side, never reaches the other; the next
  /// good version does.
  @Test func aVersionTheGateRefusesNeverCrosses() throws {
    let pair = Pair(file: #"{"port": 80}"#)
    let mirror = try pair.start(gate: Self.portGate)
    defer { mirror.stop() }
    #expect(pair.key == ["port": 80])

    pair.keyStore.put(#"{"port": 70000}"#)
    #expect(waitUntil(deadline: .seconds(30)) { !pair.lines(containing: "out of range").isEmpty }, "\(pair.lines)")
    pair.keyStore.put(#"{"port": 81}"#)
    #expect(pair.waitUntilBoth(["port": 81]), "the next good version of the key: \(String(describing: pair.file))")

    let reported = pair.lines(containing: "out of range").count
    pair.fileStore.put(#"{"port": 70001}"#)
    #expect(waitUntil(deadline: .seconds(30)) { pair.lines(containing: "out of range").count > reported }, "\(pair.lines)")
    pair.fileStore.put(#"{"port": 82}"#)
    #expect(pair.waitUntilBoth(["port": 82]), "the next good version of the file: \(String(describing: pair.key))")

    #expect(try !Pair.history(of: pair.fileStore).contains(["port": 70000]), "the key's refused version reached the file")
    #expect(try !Pair.history(of: pair.keyStore).contains(["port": 70001]), "the file's refused version reached the key")
  }

  /// Versions refused for the same reason one after the other, of the key and then of the
  /// file: each is reported once, however often the mirror retries (a check's refusal is
  /// retried every second), and the next good version crosses.
  @Test func eachRefusedVersionIsReportedOnce() throws {
    let pair = Pair(file: #"{"port": 80}"#)
    let mirror = try pair.start(gate: Self.portGate)
    defer { mirror.stop() }
    #expect(pair.key == ["port": 80])
    var expected = 0
    for (side, store) in [("key", pair.keyStore), ("file", pair.fileStore)] {
      for writer in ["a", "b"] {
        store.put(#"{"port": 70000, "by": "\#(side) \#(writer)"}"#)
        expected += 1
        #expect(waitUntil(deadline: .seconds(30)) { pair.lines(containing: "out of range").count == expected }, "\(pair.lines)")
      }
      let good: JSONValue = ["port": side == "key" ? 81 : 82]
      store.put(good.formatted(.compact))
      #expect(pair.waitUntilBoth(good), "the next good version of the \(side): \(pair.lines)")
    }
    #expect(pair.lines(containing: "out of range").count == 4, "a version reported more than once: \(pair.lines)")
  }

  /// What a sync writes comes back to each side's follower as news, which finds it this
  /// mirror's own write: no sync starts (one sync per change, however many writes). The news
  /// here says only that something changed, as a file's event does, so that each follower's
  /// look at the mirror's own write shows as an identity check of its store.
  @Test func theMirrorsOwnWritesNeverComeBackAsASync() throws {
    let pair = Pair(file: #"{"n": 0}"#)
    for store in [pair.fileStore, pair.keyStore] { store.newsCarriesVersions.withLock { $0 = false } }
    let mirror = try pair.start()
    defer { mirror.stop() }
    #expect(pair.key == ["n": 0])
    let loads = pair.record.loads
    let changes = 6
    for n in 1...changes {
      let (changed, receiving) = n % 2 == 0 ? (pair.fileStore, pair.keyStore) : (pair.keyStore, pair.fileStore)
      let looks = receiving.identityChecks
      changed.put(#"{"n": \#(n)}"#)
      #expect(pair.waitUntilBoth(["n": .number(JSONNumber(Int64(n)))]), "change \(n) did not cross")
      // The receiving side's follower has looked at the mirror's write: a sync it started
      // would be on the mirror's queue now, ahead of the next change's.
      #expect(waitUntil(deadline: .seconds(30)) { receiving.identityChecks > looks }, "the mirror's write was never looked at")
      #expect(waitUntil(deadline: .seconds(30)) { pair.record.record == MirrorHistory.Record(agreed: ["n": .number(JSONNumber(Int64(n)))]) })
    }
    #expect(pair.record.loads - loads == changes, "syncs beyond one per change: \(pair.record.loads - loads) for \(changes)")
  }

  /// A sync stopped between its two writes (the key written, the file not: here the file's
  /// write fails, as a crash cuts it) leaves its plan in the record; the next run finishes
  /// it, and a local change made meanwhile to a field that sync wrote to the key survives
  /// (merged from the plan, not from the older agreed version, where it would lose to the
  /// key's copy of the older value).
  @Test func aSyncInterruptedBetweenItsWritesIsFinishedByTheNextRun() throws {
    let pair = Pair(file: #"{"a": 1, "b": 1}"#)
    try pair.start().stop()
    pair.keyStore.put(#"{"a": 2, "b": 1}"#)
    pair.fileStore.put(#"{"a": 1, "b": 2}"#)
    pair.fileStore.failingWrites.withLock { $0 = .system(SystemError(code: EIO, operation: "write", path: pair.fileStore.name)) }
    var crashing: DocumentMirror? = try pair.start()
    weak let crashed = crashing
    #expect(pair.key == ["a": 2, "b": 2], "the first write, the key's, was made")
    #expect(pair.file == ["a": 1, "b": 2], "the second write, the file's, failed")
    #expect(pair.record.record?.pending?.merged == ["a": 2, "b": 2], "the plan is recorded before the first write")
    // The process ends: once the mirror is gone no sync of it runs any more.
    crashing?.stop()
    crashing = nil
    #expect(waitUntil(deadline: .seconds(30)) { crashed == nil }, "the stopped mirror is still held")
    pair.fileStore.failingWrites.withLock { $0 = nil }

    pair.fileStore.put(#"{"a": 1, "b": 3}"#)
    let next = try pair.start()
    defer { next.stop() }
    #expect(pair.waitUntilBoth(["a": 2, "b": 3]), "file \(String(describing: pair.file)), key \(String(describing: pair.key))")
    #expect(pair.lines(containing: "changed on both sides").isEmpty, "the sync's own write counted as a change: \(pair.lines)")
    #expect(pair.record.record == MirrorHistory.Record(agreed: ["a": 2, "b": 3]), "the plan replaced by the agreed version")
  }
}
