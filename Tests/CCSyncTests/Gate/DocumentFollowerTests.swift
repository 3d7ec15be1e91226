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

  @Test func aWriteSeenPartDoneIsReportedOnlyOnceItStayedSoForTheGrace() throws {
    let store = MemoryStore(text: #"{"n": 1}"#)
    let (document, heard, follower) = try Self.follow(store, partialWrites: .possible)
    defer { follower.stop() }

    // Mended within the grace: never reported.
    store.put(#"{"n": "#)
    #expect(waitUntil { store.heldRechecks.withLock { $0?.count } == 1 }, "no look again was asked for")
    #expect(heard.all.isEmpty, "\(heard.all)")
    store.put(#"{"n": 2}"#)
    #expect(waitUntil { heard.changes == [["n": 2]] }, "\(heard.all)")
    store.runHeldRechecks()
    follower.lookAgain("the test")
    #expect(waitUntil { document.readIfChanged() == .unchanged })
    #expect(heard.problems.isEmpty, "\(heard.problems)")

    // Still invalid when looked at again: reported, once.
    store.put(#"{"n": "#)
    #expect(waitUntil { store.heldRechecks.withLock { $0?.count } == 1 })
    #expect(heard.problems.isEmpty, "reported before the grace: \(heard.problems)")
    store.runHeldRechecks()
    #expect(waitUntil { heard.problems.count == 1 }, "\(heard.all)")
    #expect(heard.problems.first?.hasPrefix("invalid: 'mem/doc.json' is not valid JSON") == true, "\(heard.problems)")
    store.put(#"{"n": "#)  // the same problem in a new version
    #expect(waitUntil { store.heldRechecks.withLock { $0?.count } == 1 })
    store.runHeldRechecks()
    store.put(#"{"n": 3}"#)
    #expect(waitUntil { heard.changes.last == ["n": 3] }, "\(heard.all)")
    #expect(heard.problems.count == 1, "one problem reported twice: \(heard.problems)")
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
}
