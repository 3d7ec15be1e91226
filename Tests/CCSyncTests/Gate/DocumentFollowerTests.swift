import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncSystem

/// The one API that follows a document (``DocumentFollower``), on a store kept in memory: the
/// order of versions, stale news, the grace of a write seen part done, the gate, and a change
/// of the schema alone. No files, no inotify, no cluster: part of the fast tier.
@Suite struct DocumentFollowerTests {
  /// Collects a follower's events.
  final class Heard: Sendable {
    let events = Protected<[DocumentFollower.Event]>([])
    var handler: @Sendable (DocumentFollower.Event) -> Void { { [self] event in events.withLock { $0.append(event) } } }
    var all: [DocumentFollower.Event] { events.withLock { $0 } }
    var changes: [JSONValue] { all.compactMap { if case .changed(let value, _, _) = $0 { value } else { nil } } }
    var problems: [String] {
      all.compactMap {
        switch $0 {
        case .rejected(let error): "rejected: \(error)"
        case .invalid(let error): "invalid: \(error)"
        default: nil
        }
      }
    }
  }

  /// A follower of `store`'s document, read first, with its store's re-checks held for the
  /// test to run (no clock); `partialWrites`: what the store says an invalid version may be.
  static func follow(_ store: MemoryStore, partialWrites: PartialWrite = .impossible) throws -> (SharedDocument, Heard, DocumentFollower) {
    store.partialWrites.withLock { $0 = partialWrites }
    store.heldRechecks.withLock { $0 = [] }
    let document = SharedDocument(store: store)
    _ = try document.read()
    let heard = Heard()
    return (document, heard, document.follow(heard.handler))
  }

  static let schema = #"{"type": "object", "properties": {"port": {"type": "integer", "maximum": 65535}}}"#

  /// A follower of `mem/app.json` holding `port`, whose `$schema` names `mem/app.schema.json`
  /// (``schema``), which it follows too.
  static func followWithSchema(port: Int) throws -> (schema: MemoryStore, store: MemoryStore, heard: Heard, follower: DocumentFollower) {
    let neighbours = Protected<[String: MemoryStore]>([:])
    let schema = MemoryStore(name: "mem/app.schema.json", text: Self.schema, neighbours: neighbours)
    let store = MemoryStore(name: "mem/app.json", text: #"{"$schema": "./app.schema.json", "port": \#(port)}"#, neighbours: neighbours)
    let (document, heard, follower) = try follow(store)
    follower.followSchema(of: try #require(try document.read()))
    return (schema, store, heard, follower)
  }

  @Test func versionsOfOthersAreReportedInOrderAndOwnWritesAreNot() throws {
    let store = MemoryStore(text: #"{"n": 0}"#)
    let document = SharedDocument(store: store)
    _ = try document.read()
    let heard = Heard()
    let follower = document.follow(everyVersion: true, heard.handler)
    defer { follower.stop() }
    for n in 1...20 { store.put(#"{"n": \#(n)}"#) }
    #expect(waitUntil { heard.changes.last == ["n": 20] }, "\(heard.all)")
    #expect(heard.changes == (1...20).map { ["n": .number(JSONNumber(Int64($0)))] }, "every version, in order")
    try document.update { try $0.setValue(21, at: JSONPath(tokens: ["n"])) }
    store.put(#"{"n": 22}"#)
    #expect(waitUntil { heard.changes.last == ["n": 22] }, "\(heard.all)")
    #expect(!heard.changes.contains(["n": 21]), "this process's own write was reported as another's")
  }

  @Test func staleNewsDoesNotMoveTheValueBack() throws {
    let store = MemoryStore(text: #"{"n": 1}"#)
    let document = SharedDocument(store: store)
    _ = try document.read()
    let older = try #require(try store.read())
    try document.update { try $0.setValue(2, at: JSONPath(tokens: ["n"])) }
    let heard = Heard()
    let follower = DocumentFollower(document: document, followsSchema: false, handler: heard.handler)
    var stale = ChangeHint(contentMayDiffer: false, isRequestedRecheck: false, description: "late news of version 1")
    stale.current = .version(older)
    follower.look(stale)
    #expect(heard.all.isEmpty, "stale news was reported: \(heard.all)")
    #expect(document.readIfChanged() == .unchanged)
  }

  /// A look that finds a version invalid holds a re-check (the grace); a look still queued
  /// from before may hold one more, so the test waits for at least one.
  @Test func aWriteSeenPartDoneIsReportedOnlyOnceItStayedSoForTheGrace() throws {
    let store = MemoryStore(text: #"{"n": 1}"#)
    let (document, heard, follower) = try Self.follow(store, partialWrites: .possible)
    defer { follower.stop() }
    let aRecheckIsHeld = { (store.heldRechecks.withLock { $0?.count } ?? 0) >= 1 }

    // Mended within the grace: never reported.
    store.put(#"{"n": "#)
    #expect(waitUntil(aRecheckIsHeld), "no look again was asked for")
    #expect(heard.all.isEmpty, "\(heard.all)")
    store.put(#"{"n": 2}"#)
    #expect(waitUntil { heard.changes == [["n": 2]] }, "\(heard.all)")
    store.runHeldRechecks()
    follower.lookAgain("the test")
    #expect(waitUntil { document.readIfChanged() == .unchanged })
    #expect(heard.problems.isEmpty, "\(heard.problems)")

    // Still invalid when looked at again: reported, once.
    store.put(#"{"n": "#)
    #expect(waitUntil(aRecheckIsHeld))
    #expect(heard.problems.isEmpty, "reported before the grace: \(heard.problems)")
    store.runHeldRechecks()
    #expect(waitUntil { heard.problems.count == 1 }, "\(heard.all)")
    #expect(heard.problems.first?.hasPrefix("invalid: 'mem/doc.json' is not valid JSON") == true, "\(heard.problems)")
    follower.lookAgain("the test")  // the same version looked at again: not reported again
    store.put(#"{"n": "#)  // the same problem in a new version: reported again, after its grace
    #expect(waitUntil(aRecheckIsHeld))
    #expect(heard.problems.count == 1, "reported before the grace: \(heard.problems)")
    store.runHeldRechecks()
    #expect(waitUntil { heard.problems.count == 2 }, "\(heard.all)")
    store.put(#"{"n": 3}"#)
    #expect(waitUntil { heard.changes.last == ["n": 3] }, "\(heard.all)")
    #expect(heard.problems.count == 2, "one version reported twice: \(heard.problems)")
  }

  @Test func aStoreOfWholeVersionsReportsAnInvalidOneAtOnce() throws {
    let store = MemoryStore(text: #"{"n": 1}"#)
    let (_, heard, follower) = try Self.follow(store)
    defer { follower.stop() }
    store.put("{not json")
    #expect(waitUntil { heard.problems.count == 1 }, "\(heard.all)")
    #expect(store.heldRechecks.withLock { $0?.count } == 0, "a whole version was given a grace")
  }

  @Test func theGateRefusesAVersionOnceAndTheNextGoodOneIsTaken() throws {
    let neighbours = Protected<[String: MemoryStore]>([:])
    _ = MemoryStore(name: "mem/app.schema.json", text: Self.schema, neighbours: neighbours)
    let store = MemoryStore(name: "mem/app.json", text: #"{"$schema": "./app.schema.json", "port": 80}"#, neighbours: neighbours)
    // A refusal is of a whole version: no grace, even where writes may be seen part done.
    let (_, heard, follower) = try Self.follow(store, partialWrites: .possible)
    defer { follower.stop() }
    store.put(#"{"$schema": "./app.schema.json", "port": 70000}"#)
    #expect(waitUntil { heard.problems.count == 1 }, "\(heard.all)")
    #expect(heard.problems.first?.contains("/port: 70000 is greater than the maximum") == true, "\(heard.problems)")
    follower.lookAgain("the test")
    store.put(#"{"$schema": "./app.schema.json", "port": 81}"#)
    #expect(waitUntil { heard.changes.count == 1 }, "\(heard.all)")
    #expect(heard.changes.first?.objectValue?["port"] == 81)
    #expect(heard.problems.count == 1, "\(heard.problems)")
    #expect(store.heldRechecks.withLock { $0?.count } == 0)
  }

  /// A refusal is reported once per version: two versions refused for the same reason are
  /// two reports; the same version looked at again, or judged again by a schema that changed
  /// and gives the same verdict, is none. Looks run in order, so each step has happened
  /// by the time the next report is heard.
  @Test func eachVersionRefusedForTheSameReasonIsReportedOnce() throws {
    let (schema, store, heard, follower) = try Self.followWithSchema(port: 80)
    defer { follower.stop() }
    let reason = "/port: 70000 is greater than the maximum"
    store.put(#"{"$schema": "./app.schema.json", "port": 70000, "by": "a"}"#)
    #expect(waitUntil { heard.problems.count == 1 }, "\(heard.all)")
    follower.lookAgain("the test")
    schema.put(Self.schema + " ")  // the schema changes and gives the same verdict
    store.put(#"{"$schema": "./app.schema.json", "port": 70000, "by": "b"}"#)
    #expect(waitUntil { heard.problems.count == 2 }, "\(heard.all)")
    #expect(heard.problems.allSatisfy { $0.hasPrefix("rejected: ") && $0.contains(reason) }, "\(heard.problems)")
    #expect(heard.problems[0] == heard.problems[1], "not the same reason: \(heard.problems)")
    follower.lookAgain("the test")
    store.put(#"{"$schema": "./app.schema.json", "port": 81}"#)
    #expect(waitUntil { heard.changes.count == 1 }, "\(heard.all)")
    #expect(heard.changes.first?.objectValue?["port"] == 81)
    #expect(heard.problems.count == 2, "a version reported more than once: \(heard.problems)")
  }

  /// The version kept, judged again each time its schema changes: a verdict is reported once
  /// per reason; the same verdict again is not reported.
  @Test func aVerdictOnTheVersionKeptIsReportedOncePerReason() throws {
    let (schema, store, heard, follower) = try Self.followWithSchema(port: 8080)
    defer { follower.stop() }
    let stricter = #"{"type": "object", "properties": {"port": {"type": "integer", "maximum": 1024}}}"#
    schema.put(stricter)
    #expect(waitUntil { heard.problems.count == 1 }, "\(heard.all)")
    schema.put(stricter + " ")  // the same verdict: not reported again
    schema.put(#"{"type": "object", "properties": {"port": {"type": "integer", "maximum": 1000}}}"#)
    #expect(waitUntil { heard.problems.count == 2 }, "\(heard.all)")
    #expect(heard.problems[0].contains("maximum 1024") && heard.problems[1].contains("maximum 1000"), "\(heard.problems)")
    store.put(#"{"$schema": "./app.schema.json", "port": 999}"#)
    #expect(waitUntil { heard.changes.count == 1 }, "\(heard.all)")
    #expect(heard.problems.count == 2, "\(heard.problems)")
  }

  @Test func aChangeOfTheSchemaAloneJudgesTheVersionKeptAgain() throws {
    let neighbours = Protected<[String: MemoryStore]>([:])
    let schema = MemoryStore(name: "mem/app.schema.json", text: Self.schema, neighbours: neighbours)
    let store = MemoryStore(name: "mem/app.json", text: #"{"$schema": "./app.schema.json", "port": 8080}"#, neighbours: neighbours)
    let document = SharedDocument(store: store)
    let initial = try #require(try document.read())
    let heard = Heard()
    let follower = document.follow(heard.handler)
    defer { follower.stop() }
    follower.followSchema(of: initial)
    schema.put(#"{"type": "object", "properties": {"port": {"type": "integer", "maximum": 1024}}}"#)
    #expect(waitUntil { heard.problems.count == 1 }, "\(heard.all)")
    #expect(heard.problems.first?.hasPrefix("rejected: ") == true && heard.problems.first?.contains("8080") == true, "\(heard.problems)")
    #expect(heard.changes.isEmpty, "the version kept was reported as a change")
    store.put(#"{"$schema": "./app.schema.json", "port": 999}"#)
    #expect(waitUntil { heard.changes.count == 1 }, "\(heard.all)")
    #expect(heard.problems.count == 1, "reported more than once: \(heard.problems)")
  }

  /// A version the schema refused is taken once a change of the schema alone lets it pass: the
  /// document holds it, and nothing else would bring it to the readers until the next write.
  /// Tightened again, the schema refuses it once more, and says so.
  @Test func aVersionRefusedBeforeIsTakenWhenTheSchemaChangesToPassIt() throws {
    let (schema, store, heard, follower) = try Self.followWithSchema(port: 80)
    defer { follower.stop() }
    store.put(#"{"$schema": "./app.schema.json", "port": 70000}"#)
    #expect(waitUntil { heard.problems.count == 1 }, "\(heard.all)")
    #expect(heard.changes.isEmpty, "a refused version was taken: \(heard.all)")
    schema.put(#"{"type": "object", "properties": {"port": {"type": "integer", "maximum": 99999}}}"#)
    #expect(waitUntil { heard.changes.count == 1 }, "the version that passes now was not taken: \(heard.all)")
    #expect(heard.changes.first?.objectValue?["port"] == 70000)
    schema.put(Self.schema)
    #expect(waitUntil { heard.problems.count == 2 }, "the version taken, refused again, was not reported: \(heard.all)")
    #expect(heard.changes.count == 1, "\(heard.all)")
  }
}
