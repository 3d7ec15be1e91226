import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncSystem

/// The storage layer (``CodableStorage``: merge, reload, the gate, exact updates) on a store
/// kept in memory: no files, no inotify, no cluster. The storages do not watch; each test
/// gives a storage the news of a version itself, on its own thread, as the store's watch
/// would, so that what it hears and when is the test's to say. Part of the fast tier
/// (`scripts/test --fast`).
@Suite struct InMemoryStorageTests {
  /// A storage of ``SharedSettings`` over `store`'s document, written only when asked, its
  /// errors and its diagnostic lines collected.
  final class Rig: Sendable {
    let store: MemoryStore
    let storage: CodableStorage<SharedSettings>
    let errors = Protected<[String]>([])
    let logLines = Protected<[String]>([])

    init(_ store: MemoryStore) {
      self.store = store
      var options = StorageOptions(watchesForChanges: false, flushesAtExit: false)
      let logLines = self.logLines
      options.logger = DiagnosticLog(minimumLevel: .warning) { _, message in logLines.withLock { $0.append(message) } }
      storage = CodableStorage(
        value: SharedSettings(), readsFile: true, document: SharedDocument(store: store), location: .path(store.name),
        updateMode: .manual, options: options)
      let errors = self.errors
      storage.onError { error in errors.withLock { $0.append(error.description) } }
    }

    /// Gives the storage the news of what the store holds now, as its watch would.
    func hearNews() throws {
      storage.storeMayHaveChanged(MemoryStore.news(of: try store.read()))
    }

    /// The store's current document.
    func stored() throws -> JSONValue {
      try JSONValue(parsing: Array(try #require(store.text).utf8))
    }
  }

  static let schema = #"{"type": "object", "properties": {"fontSize": {"type": "integer", "minimum": 6}}}"#

  /// A store of `mem/settings.json` (dark, 12) whose `$schema` names
  /// `mem/settings.schema.json` (``schema``), and a rig of a storage over it.
  static func settingsWithSchema() -> (MemoryStore, Rig) {
    let neighbours = Protected<[String: MemoryStore]>([:])
    _ = MemoryStore(name: "mem/settings.schema.json", text: schema, neighbours: neighbours)
    let store = MemoryStore(
      name: "mem/settings.json", text: #"{"$schema": "./settings.schema.json", "theme": "dark", "fontSize": 12}"#, neighbours: neighbours)
    return (store, Rig(store))
  }

  @Test func anotherWritersVersionIsMergedWithPendingLocalEdits() throws {
    let rig = Rig(MemoryStore(text: #"{"theme": "dark", "fontSize": 12, "counter": 1}"#))
    let storage = rig.storage
    #expect(storage.wrappedValue == SharedSettings(theme: "dark", fontSize: 12, counter: 1))
    storage.wrappedValue.fontSize = 20
    #expect(storage.hasPendingChanges)

    rig.store.put(#"{"theme": "blue", "fontSize": 12, "counter": 5, "extra": true}"#)
    try rig.hearNews()
    #expect(storage.wrappedValue == SharedSettings(theme: "blue", fontSize: 20, counter: 5), "\(storage.wrappedValue)")
    #expect(storage.hasPendingChanges, "the local edit was lost in the merge")

    try storage.save()
    #expect(!storage.hasPendingChanges)
    let stored = try rig.stored()
    #expect(stored.objectValue?["theme"] == "blue" && stored.objectValue?["counter"] == 5, "another writer's fields reverted: \(stored)")
    #expect(stored.objectValue?["fontSize"] == 20 && stored.objectValue?["extra"] == true, "\(stored)")
    #expect(rig.errors.withLock { $0 }.isEmpty, "\(rig.errors.withLock { $0 })")
  }

  @Test func aVersionTheGateRefusesIsKeptOutAndTheNextGoodOneIsTaken() throws {
    let (store, rig) = Self.settingsWithSchema()
    let storage = rig.storage
    #expect(storage.wrappedValue.fontSize == 12 && storage.fileState == .valid)

    store.put(#"{"$schema": "./settings.schema.json", "theme": "bad", "fontSize": 1}"#)
    try rig.hearNews()
    try rig.hearNews()  // the same news again: not reported again
    #expect(storage.wrappedValue.theme == "dark" && storage.wrappedValue.fontSize == 12, "a refused version was adopted")
    guard case .invalid(let message) = storage.fileState else {
      Issue.record("fileState is \(storage.fileState)")
      return
    }
    #expect(message.contains("/fontSize: 1") && message.contains("(minimum)"), "\(message)")
    #expect(rig.errors.withLock { $0 } == [message], "\(rig.errors.withLock { $0 })")
    #expect(rig.logLines.withLock { $0 } == [message], "one diagnostic line: \(rig.logLines.withLock { $0 })")

    store.put(#"{"$schema": "./settings.schema.json", "theme": "good", "fontSize": 16}"#)
    try rig.hearNews()
    #expect(storage.wrappedValue.theme == "good" && storage.wrappedValue.fontSize == 16)
    #expect(storage.fileState == .valid)
    #expect(rig.errors.withLock { $0.count } == 1, "\(rig.errors.withLock { $0 })")

    // A save keeps the document's `$schema`; a value the schema refuses is not written.
    storage.wrappedValue.fontSize = 18
    try storage.save()
    #expect(try rig.stored().objectValue?["$schema"] == "./settings.schema.json")
    storage.wrappedValue.fontSize = 2
    #expect(throws: StorageError.self) { try storage.save() }
    #expect(storage.hasPendingChanges)
    #expect(try rig.stored().objectValue?["fontSize"] == 18)
  }

  /// Two versions refused for the same reason, one after the other: each is reported once
  /// (`onError`, one diagnostic line, `fileState`), the same news again is not, and the next
  /// good version is taken.
  @Test func eachRefusedVersionIsReportedOnceEvenForTheSameReason() throws {
    let (store, rig) = Self.settingsWithSchema()
    let storage = rig.storage
    var reports: [String] = []
    for theme in ["first", "second"] {
      store.put(#"{"$schema": "./settings.schema.json", "theme": "\#(theme)", "fontSize": 1}"#)
      try rig.hearNews()
      try rig.hearNews()  // the same version again: not reported again
      guard case .invalid(let message) = storage.fileState else {
        Issue.record("fileState is \(storage.fileState) after the \(theme) refused version")
        return
      }
      #expect(message.contains("/fontSize: 1") && message.contains("(minimum)"), "\(message)")
      reports.append(message)
      #expect(rig.errors.withLock { $0 } == reports, "\(rig.errors.withLock { $0 })")
      #expect(rig.logLines.withLock { $0 } == reports, "one diagnostic line a version: \(rig.logLines.withLock { $0 })")
    }
    #expect(reports[0] == reports[1], "not the same reason: \(reports)")
    #expect(storage.wrappedValue.theme == "dark" && storage.wrappedValue.fontSize == 12, "a refused version was adopted")

    store.put(#"{"$schema": "./settings.schema.json", "theme": "good", "fontSize": 16}"#)
    try rig.hearNews()
    #expect(storage.wrappedValue.theme == "good" && storage.wrappedValue.fontSize == 16)
    #expect(storage.fileState == .valid)
    #expect(rig.errors.withLock { $0.count } == 2, "\(rig.errors.withLock { $0 })")
  }

  @Test func exactUpdatesFromSeveralThreadsOfTwoStorages() throws {
    let store = MemoryStore(text: #"{"counter": 0}"#)
    let rigs = [Rig(store), Rig(store)]
    let threadsPerStorage = 4
    let updatesPerThread = 25
    let threads = (0..<rigs.count * threadsPerStorage).map { index in
      BackgroundThread {
        for _ in 0..<updatesPerThread { try rigs[index % rigs.count].storage.update { $0.counter += 1 } }
      }
    }
    for thread in threads {
      guard let result = thread.result(deadline: .seconds(60)) else {
        Issue.record("an updating thread did not finish")
        return
      }
      try result.get()
    }
    let total = rigs.count * threadsPerStorage * updatesPerThread
    #expect(try rigs[0].stored().objectValue?["counter"] == .number(JSONNumber(Int64(total))), "\(store.text ?? "nil")")
    for rig in rigs {
      try rig.hearNews()
      #expect(rig.storage.wrappedValue.counter == total)
      #expect(!rig.storage.hasPendingChanges)
      #expect(rig.errors.withLock { $0 }.isEmpty, "\(rig.errors.withLock { $0 })")
    }
  }

  @Test func ownWritesAreNeverHeardAsExternal() throws {
    let rig = Rig(MemoryStore(text: #"{"theme": "dark"}"#))
    let storage = rig.storage
    let heard = Protected<[StorageChange<SharedSettings>]>([])
    let observation = storage.observe { change in heard.withLock { $0.append(change) } }
    defer { observation.cancel() }
    var external: [SharedSettings] { heard.withLock { $0.filter { $0.origin == .external }.map(\.value) } }

    storage.wrappedValue.fontSize = 30
    try storage.save()
    try rig.hearNews()  // the news of this storage's own save
    try storage.update { $0.counter = 7 }
    try rig.hearNews()  // of its own update
    try rig.hearNews()
    #expect(external.isEmpty, "own writes heard as another's: \(external)")
    #expect(heard.withLock { $0.allSatisfy { $0.origin == .local } && !$0.isEmpty })

    rig.store.put(#"{"theme": "light", "fontSize": 30, "counter": 7}"#)
    try rig.hearNews()
    #expect(external == [SharedSettings(theme: "light", fontSize: 30, counter: 7)], "\(external)")
  }

  @Test func aMissingDocumentKeepsTheValue() throws {
    let rig = Rig(MemoryStore(text: #"{"theme": "dark", "fontSize": 14}"#))
    let storage = rig.storage
    storage.wrappedValue.counter = 3
    rig.store.remove()
    try rig.hearNews()
    #expect(storage.fileState == .missing)
    #expect(storage.wrappedValue == SharedSettings(theme: "dark", fontSize: 14, counter: 3), "\(storage.wrappedValue)")
    #expect(storage.hasPendingChanges)
    #expect(rig.errors.withLock { $0 }.isEmpty, "a missing document is no error: \(rig.errors.withLock { $0 })")

    rig.store.put(#"{"theme": "blue"}"#)
    try rig.hearNews()
    #expect(storage.fileState == .valid)
    #expect(storage.wrappedValue.theme == "blue" && storage.wrappedValue.counter == 3, "\(storage.wrappedValue)")

    // A storage over no document at all starts from its default, and its save creates it.
    let empty = Rig(MemoryStore())
    #expect(empty.storage.fileState == .missing && empty.storage.wrappedValue == SharedSettings())
    empty.storage.wrappedValue.theme = "new"
    try empty.storage.save()
    #expect(try empty.stored().objectValue?["theme"] == "new")
  }
}
