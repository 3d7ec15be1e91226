import Foundation
import Testing
@testable import CCSync

/// A storage's saves racing its own edits, loads and reloads: each interleaving is set up
/// deterministically (holding the document's group commit, or calling the save's steps in
/// order), not left to timing.
@Suite struct StorageSaveRaceTests {
  let quiet = StorageOptions(watchesForChanges: false, flushesAtExit: false, logger: .silent)

  /// An edit made while an automatic save is being written is not in that save; the
  /// scheduler must write it on its own afterwards, not leave it for the next edit or exit.
  @Test(arguments: [UpdateMode.afterIdle(seconds: 0.05), .throttled(seconds: 0.05)])
  func anEditMadeDuringAnAutomaticSaveIsWrittenAfterIt(mode: UpdateMode) throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
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
