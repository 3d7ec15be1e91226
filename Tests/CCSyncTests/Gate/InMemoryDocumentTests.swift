import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncSystem

/// The document layer and the gate on a store kept in memory: no files, no inotify, no
/// cluster. Part of the fast tier (`scripts/test --fast`).
@Suite struct InMemoryDocumentTests {
  static let schema = #"{"type": "object", "properties": {"port": {"type": "integer", "maximum": 65535}}}"#

  @Test func updatesAreExactAndKeepTheText() throws {
    let jwccStore = MemoryStore(name: "mem/doc.jsonc", text: "{\n    // comment\n    \"port\": 8080,\n}\n")
    let jwcc = SharedDocument(store: jwccStore)
    try jwcc.update { try $0.setValue(9090, at: JSONPath(tokens: ["port"])) }
    let text = jwccStore.text
    #expect(text == "{\n    // comment\n    \"port\": 9090,\n}\n")
    let threads = 8
    DispatchQueue.concurrentPerform(iterations: threads) { _ in
      for _ in 0..<25 {
        try? jwcc.update { json in
          let value = (try json.value(at: JSONPath(tokens: ["n"])))?.numberValue?.int64Value ?? 0
          try json.setValue(.number(JSONNumber(value + 1)), at: JSONPath(tokens: ["n"]))
        }
      }
    }
    #expect(try jwcc.read()?.objectValue?["n"] == .number(JSONNumber(Int64(threads * 25))))
  }

  /// An update inside an update's closure of the same document on one thread would wait for
  /// itself: it is refused with `EDEADLK` naming the document, and the outer update goes on.
  @Test func anUpdateNestedInAnUpdateIsRefusedNotDeadlocked() throws {
    let store = MemoryStore(text: #"{"n": 1}"#)
    let document = SharedDocument(store: store)
    var nestedError: (any Error)?
    try document.update { json in
      do {
        try document.update { try $0.setValue(3, at: JSONPath(tokens: ["n"])) }
      } catch {
        nestedError = error
      }
      try json.setValue(2, at: JSONPath(tokens: ["n"]))
    }
    guard case .store(.system(let system))? = nestedError as? StorageError else {
      Issue.record("expected EDEADLK, got \(String(describing: nestedError))")
      return
    }
    #expect(system.code == EDEADLK)
    #expect("\(system)".contains(store.name))
    #expect(try document.read()?.objectValue?["n"] == 2)
  }

  @Test func theGateRefusesWritesAndVersionsFromOthers() throws {
    let neighbours = Protected<[String: MemoryStore]>([:])
    _ = MemoryStore(name: "mem/app.schema.json", text: Self.schema, neighbours: neighbours)
    let store = MemoryStore(name: "mem/app.json", text: #"{"$schema": "./app.schema.json", "port": 80}"#, neighbours: neighbours)
    let document = SharedDocument(store: store)
    #expect(throws: StorageError.self) { try document.update { try $0.setValue(70000, at: JSONPath(tokens: ["port"])) } }
    #expect(store.text == #"{"$schema": "./app.schema.json", "port": 80}"#)
    _ = document.readIfChanged()
    store.put(#"{"$schema": "./app.schema.json", "port": "x"}"#)
    guard case .invalid(let error) = document.readIfChanged(contentMayDiffer: true), case .rejected(_, let reasons) = error else {
      Issue.record("a refused version was adopted")
      return
    }
    #expect(reasons.first?.contains("/port: \"x\" is not an integer") == true, "\(reasons)")
    store.put(#"{"$schema": "./app.schema.json", "port": 81}"#)
    let next = document.readIfChanged(contentMayDiffer: true)
    guard case .changed(let value) = next else { Issue.record("the next good version was not adopted: \(next)"); return }
    #expect(value.objectValue?["port"] == 81)
  }

  @Test func historyAndRollbackThroughTheSeam() throws {
    let store = MemoryStore(text: #"{"a": 1}"#)
    let document = SharedDocument(store: store)
    try document.update { try $0.setValue(2, at: JSONPath(tokens: ["a"])) }
    try document.update { try $0.setValue(3, at: JSONPath(tokens: ["a"])) }
    let versions = try document.versions()
    #expect(versions.map(\.id) == ["3", "2", "1"])
    try document.rollback(to: "1")
    #expect(store.text == #"{"a": 1}"#)
    #expect(try document.versions(limit: 1).first?.id == "4")
  }
}
