import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// A storage's saves racing its own edits, loads and reloads: each interleaving is set up
/// deterministically (holding the document's group commit, or calling the save's steps in
/// order), not left to timing.
@Suite struct StorageSaveRaceTests {
  let quiet = StorageOptions(watchesForChanges: false, flushesAtExit: false, logger: .silent)

  /// An edit made while an automatic save is being written is not in that save; the
  /// scheduler must write it on its own afterwards, not leave it for the next edit or exit.
  @Test(arguments: [UpdateMode.afterIdle(.milliseconds(50)), .throttled(.milliseconds(50))])
  func anEditMadeDuringAnAutomaticSaveIsWrittenAfterIt(mode: UpdateMode) throws {
    try withTemporaryDirectory { directory throws in
      let path = directory.file("settings.json")
      writeFile(path, #"{"theme": "light", "fontSize": 13}"#)
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: mode, options: quiet)
      let holding = Protected(false)
      let editedDuringSave = Protected(false)
      // Leads a batch of the document's group commit and holds it until the automatic save
      // has queued behind it (having taken its change set) and the second edit is made.
      let holder = BackgroundThread {
        try storage.document.update { _ in
          holding.withLock { $0 = true }
          _ = waitUntil { storage.document.groupCommit.queuedCount > 0 }
          _ = waitUntil { editedDuringSave.withLock { $0 } }
        }
      }
      #expect(waitUntil { holding.withLock { $0 } })
      storage.wrappedValue.theme = "dark"
      #expect(waitUntil { storage.document.groupCommit.queuedCount > 0 }, "the automatic save did not start")
      storage.wrappedValue.fontSize = 20
      editedDuringSave.withLock { $0 = true }
      #expect(throws: Never.self) { try holder.value() }
      #expect(waitUntil { (try? fileJSON(path))?.objectValue?["fontSize"] == 20 },
              "the edit made during the save was never written: \(String(describing: try? fileJSON(path)))")
      #expect(try fileJSON(path).objectValue?["theme"] == "dark")
      #expect(waitUntil { !storage.hasPendingChanges })
    }
  }
}

extension StorageSaveRaceTests {
  /// A save's result can reach the storage after the watcher took a newer version: another
  /// process wrote between this save's write and its result being taken, and the reload
  /// merged this save's edits (still pending) over it. The newer version holds those edits
  /// already, or a later value of the same field, which must win: the result settles them
  /// (they stop being pending) and the value becomes the newer version, with only edits made
  /// since the save started on top. The save's steps are called in order, as `save()` makes
  /// them, with the other process's write and the reload between the write and the result.
  @Test(arguments: [false, true])
  func aSaveResultTakenAfterANewerReloadDoesNotPutItsEditsBackOverIt(editDuringSave: Bool) throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      writeFile(path, #"{"theme": "light", "fontSize": 13}"#)
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: quiet)
      let probe = ReloadProbe(storage)
      storage.wrappedValue.theme = "mine"

      let (written, saved, rank) = try writePendingChanges(of: storage)
      if editDuringSave { storage.wrappedValue.fontSize = 20 }
      let other = try startSession(path)
      #expect(other.request("set theme theirs") != nil)
      storage.storeMayHaveChanged(ChangeHint(FileWatchReason.directoryEvent(inPlaceWrite: false)))  // the watcher, first
      #expect(storage.wrappedValue.theme == "mine", "the reload keeps the edit still pending on top")
      // The save's result, late, delivered as `save()` delivers it.
      if let delivery = storage.adopt(written, origin: .external, saved: saved, rank: rank).delivery { storage.observers.deliver(delivery) }

      #expect(storage.wrappedValue.theme == "theirs", "the save's edit, written already, still shown over a later write")
      #expect(storage.wrappedValue.fontSize == (editDuringSave ? 20 : 13))
      #expect(storage.hasPendingChanges == editDuringSave, "only an edit made since the save started is pending")
      #expect(probe.changes.last?.value.theme == "theirs")
      try storage.flush()
      #expect(try fileJSON(path).objectValue?["theme"] == "theirs", "the next save put the older edit back")
      #expect(try fileJSON(path).objectValue?["fontSize"] == (editDuringSave ? 20 : 13))
      _ = other.finish()
    }
  }

  /// The same, when the save's own result cannot be decoded (it kept a member another process
  /// wrote that the type cannot read, which a later write fixed): the newer version, already
  /// taken, stands. The late result used to be settled as an unreadable write, which took the
  /// save's own value for the synced version: the file reported invalid though it is valid,
  /// the other process's fields pending, and written back over a third process's later write.
  @Test func aLateSaveResultThatCannotBeDecodedLeavesTheNewerVersionStanding() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      writeFile(path, #"{"theme": "light", "fontSize": "huge"}"#)
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: quiet)
      storage.wrappedValue.counter = 7

      let (written, saved, rank) = try writePendingChanges(of: storage)
      // Another process makes the file decodable; the watcher takes that version first.
      try SharedDocument(path: path).update { $0 = ["theme": "theirs", "fontSize": 20, "counter": 7] }
      storage.storeMayHaveChanged(ChangeHint(FileWatchReason.directoryEvent(inPlaceWrite: false)))
      #expect(storage.wrappedValue == SharedSettings(theme: "theirs", fontSize: 20, counter: 7))
      // The save's result, late, taken as `save()` takes it.
      let (_, failure) = storage.adopt(written, origin: .external, saved: saved, rank: rank)

      #expect(failure == nil, "\(String(describing: failure))")
      #expect(storage.fileState == .valid)
      #expect(!storage.hasPendingChanges)
      #expect(storage.wrappedValue == SharedSettings(theme: "theirs", fontSize: 20, counter: 7))
      try SharedDocument(path: path).update { try $0.setValue(30, at: JSONPath(parsing: "fontSize")) }
      try storage.flush()
      #expect(try fileJSON(path).objectValue?["fontSize"] == 30, "an older value was written back")
    }
  }

  /// Observers hear an update's change as this process's (`.local`), and a save's result,
  /// which can only bring other processes' fields, as `.external`.
  @Test func anUpdateIsHeardAsLocalAndWhatASaveBringsAsExternal() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: quiet)
      let probe = ReloadProbe(storage)
      try storage.update { $0.counter += 1 }
      #expect(probe.changes.map(\.origin) == [.local])
      #expect(probe.changes.last?.value.counter == 1)

      let other = try startSession(path)
      #expect(other.request("set fontSize 20") != nil)
      storage.wrappedValue.theme = "dark"
      try storage.save()
      #expect(probe.changes.map(\.origin) == [.local, .local, .external])
      #expect(probe.changes.last?.value == SharedSettings(theme: "dark", fontSize: 20, counter: 1))
      _ = other.finish()
    }
  }
}

extension StorageSaveRaceTests {
  /// `load()` racing this process's own save: a load that read the file just before the save
  /// renamed its version in, and recorded what it read after the save recorded its own, took
  /// the older version as the newer one, and the value went back behind the save. A stress
  /// test (a large file makes the read slow enough to straddle the save): it cannot show the
  /// race absent, but it failed in most rounds before the fix.
  @Test func aLoadRacingASaveNeverTakesTheVersionTheSaveReplaced() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      var large = SharedSettings()
      large.tags = (0..<100_000).map { "tag-number-\($0)" }
      _ = FileManager.default.createFile(atPath: path, contents: try JSONEncoder().encode(large))
      for round in 1...4 {
        let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: quiet)
        storage.wrappedValue.counter = round
        // Before the save every load keeps the pending counter on top; after it the file has
        // it. A value heard without it is the value going back behind the save.
        let wentBack = Protected<Int?>(nil)
        let observation = storage.observe { change in
          if change.value.counter != round { wentBack.withLock { $0 = $0 ?? change.value.counter } }
        }
        let saved = Protected(false)
        let loader = BackgroundThread {
          var loads = 0
          while !saved.withLock({ $0 }) || loads < 2 {
            try storage.load()
            loads += 1
          }
        }
        _ = waitUntil { holdsLoads(storage) }
        try storage.save()
        saved.withLock { $0 = true }
        #expect(throws: Never.self) { try loader.value(deadline: .seconds(60)) }
        observation.cancel()
        #expect(wentBack.withLock { $0 } == nil, "round \(round): the value went back to counter \(wentBack.withLock { $0 } ?? -1)")
        #expect(storage.wrappedValue.counter == round)
        #expect(try fileJSON(path).objectValue?["counter"] == .number(JSONNumber(round)))
      }
    }
  }
}

/// Whether a load of `storage` has recorded a version (its document saw one): the loader is
/// running, so the save that follows races with it.
/// The write `save()` makes, called by hand so that a test can act between it and the
/// result's adoption: the pending change set, applied to the file under the lock. Returns the
/// document written, the edits it took and its rank, for `adopt`.
private func writePendingChanges(
  of storage: CodableStorage<SharedSettings>
) throws -> (written: JSONValue, saved: StorageState<SharedSettings>.SavedEdits, rank: VersionTracking.Rank?) {
  let (changes, saved, seed) = try storage.startWrite()
  let (written, rank, _) = try storage.document.updateTracked(invalidFile: .preserveAndReplace) {
    document, fileHeldDocument -> JSONValue in
    document = CodableStorage<SharedSettings>.applying(changes, seed: seed, to: document, fileHeldDocument: fileHeldDocument)
    return document
  }
  return (written, saved, rank)
}

private func holdsLoads(_ storage: CodableStorage<SharedSettings>) -> Bool {
  storage.document.tracking.withLock { $0.generation } > 1
}

extension StorageSaveRaceTests {
  /// Observers of what a save brings in are called after the save left the storage's write
  /// sequence: a handler that waits for another thread (as `DispatchQueue.main.sync` does)
  /// while that thread calls `update` on the same storage would otherwise wait for ever.
  @Test func anObserverOfASaveMayWaitForAnotherThreadThatUpdates() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      writeFile(path, #"{"theme": "light", "fontSize": 13}"#)
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: quiet)
      let other = try startSession(path)
      #expect(other.request("set fontSize 20") != nil)  // this storage does not watch: its save brings it in
      _ = other.finish()
      let inObserver = DispatchSemaphore(value: 0)
      let updated = DispatchSemaphore(value: 0)
      let waitedOut = Protected(false)
      let observation = storage.observe { change in
        guard change.origin == .external, change.value.fontSize == 20, change.value.counter == 0 else { return }
        inObserver.signal()
        if updated.wait(timeout: .now() + 10) == .timedOut { waitedOut.withLock { $0 = true } }
      }
      defer { observation.cancel() }
      let updater = BackgroundThread {
        inObserver.wait()
        try storage.update { $0.counter += 1 }
        updated.signal()
      }
      storage.wrappedValue.theme = "dark"
      try storage.save()
      #expect(throws: Never.self) { try updater.value(deadline: .seconds(20)) }
      #expect(!waitedOut.withLock { $0 }, "the observer's wait for the updating thread ran out")
      #expect(storage.wrappedValue == SharedSettings(theme: "dark", fontSize: 20, counter: 1))
    }
  }

  /// Error handlers, like observers, are called out of the write sequence: one that waits for
  /// another thread saving this storage does not deadlock, when the error is about a save's
  /// own result (the file it wrote has a member the type cannot decode).
  @Test func anErrorHandlerOfASaveMayWaitForAnotherThreadThatSaves() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      writeFile(path, #"{"theme": "light", "fontSize": 13}"#)
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: quiet)
      // Another process makes a member the type cannot decode; this storage does not watch, so
      // its save's result is where it meets it.
      try SharedDocument(path: path).update { try $0.setValue("huge", at: JSONPath(parsing: "fontSize")) }
      let inHandler = DispatchSemaphore(value: 0)
      let saved = DispatchSemaphore(value: 0)
      let waitedOut = Protected(false)
      let handled = Protected(false)
      storage.onError { error in
        guard error.description.contains("fontSize"), !handled.withLock({ let was = $0; $0 = true; return was }) else { return }
        inHandler.signal()
        if saved.wait(timeout: .now() + 10) == .timedOut { waitedOut.withLock { $0 = true } }
      }
      let saver = BackgroundThread {
        inHandler.wait()
        storage.wrappedValue.counter = 1
        try storage.save()
        saved.signal()
      }
      storage.wrappedValue.theme = "dark"
      try storage.save()
      #expect(throws: Never.self) { try saver.value(deadline: .seconds(20)) }
      #expect(!waitedOut.withLock { $0 }, "the error handler's wait for the saving thread ran out")
      #expect(try fileJSON(path) == ["theme": "dark", "fontSize": "huge", "counter": 1])
    }
  }
}
