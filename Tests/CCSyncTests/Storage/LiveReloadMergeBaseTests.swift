import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// A reload without local changes takes the file's version as decoded, without encoding the
/// value back: these check that the merge still starts from the right base, that applying
/// external versions writes nothing, and that observers hear each distinct value once.
/// Other processes are a helper child (`session`) and shell writers.
@Suite struct LiveReloadMergeBaseTests {
  /// With a key the type does not know in the file, versions are compared by their encodings;
  /// without, by the JSON they were decoded from: both ways lead to the same base.
  @Test(arguments: [false, true])
  func localEditAfterSeveralReloadsChangesOnlyItsOwnFieldAndSurvivesTheNextReload(fileHasUnknownKey: Bool) throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      writeFile(path, fileHasUnknownKey ? #"{"theme": "light", "fontSize": 13, "extra": "kept"}"# : #"{"theme": "light", "fontSize": 13}"#)
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: watchingOptions)
      let probe = ReloadProbe(storage)

      let child = try startSession(path)
      for (request, reached) in [("set theme a", SharedSettings(theme: "a")),
                                 ("set fontSize 20", SharedSettings(theme: "a", fontSize: 20)),
                                 ("set theme b", SharedSettings(theme: "b", fontSize: 20))] {
        #expect(child.request(request) != nil)
        #expect(waitUntil { storage.wrappedValue == reached }, "\(request)")
      }
      #expect(!storage.hasPendingChanges, "external versions are not local edits")

      storage.wrappedValue.counter = 5
      #expect(storage.hasPendingChanges)
      // The change set is the edit alone: diffed against the version last reloaded, not an
      // older one (which would put `theme` and `fontSize` back to what that version said).
      let changes = storage.state.withLock { $0.pendingChanges }
      #expect(changes.applied(to: .object(JSONObject())) == ["counter": 5], "\(changes)")

      // Another process's change arrives while the edit is pending: both are kept.
      #expect(child.request("set theme c") != nil)
      #expect(waitUntil { storage.wrappedValue.theme == "c" })
      #expect(storage.wrappedValue == SharedSettings(theme: "c", fontSize: 20, counter: 5))
      #expect(storage.hasPendingChanges, "the local edit is still unsaved")

      try storage.flush()
      let file = try fileJSON(path).objectValue
      #expect(file?["theme"] == "c")
      #expect(file?["fontSize"] == 20)
      #expect(file?["counter"] == 5)
      #expect(file?["extra"] == (fileHasUnknownKey ? "kept" : nil), "a key the type does not know is never dropped")
      #expect(!storage.hasPendingChanges)
      // Observers are called after the value is adopted, on the storage's reload queue: wait for them.
      #expect(waitUntil { probe.changes.count == 5 }, "\(probe.changes)")
      #expect(probe.changes.map(\.origin) == [.external, .external, .external, .local, .external], "\(probe.changes)")
      #expect(probe.errors.isEmpty)
      _ = child.finish()
    }
  }

  /// With `.immediate`, any write the storage scheduled would happen at once; the sentinel
  /// (another storage on the same watcher thread) hears a later change only after every event
  /// before it was handled.
  @Test func applyingExternalVersionsWritesNothing() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      let sentinelPath = directory.file("sentinel.json")
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .immediate, options: watchingOptions)
      let sentinel = CodableStorage(defaultValue: SharedSettings(), path: sentinelPath, updateMode: .manual, options: watchingOptions)
      let probe = ReloadProbe(storage)

      let child = try startSession(path)
      for size in 20...24 {
        #expect(child.request("set fontSize \(size)") != nil)
        #expect(waitUntil { storage.wrappedValue.fontSize == size })
      }
      let written = identity(of: path)
      #expect(written != nil)
      let outcome = try ChildProcess.run(try testHelper(), ["count-up", sentinelPath, "1"])
      #expect(outcome.succeeded, "\(outcome.standardError)")
      #expect(waitUntil { sentinel.wrappedValue.counter == 1 })

      #expect(identity(of: path) == written, "applying an external version wrote the file")
      #expect(!storage.hasPendingChanges)
      #expect(waitUntil { probe.externalValues.last?.fontSize == 24 }, "\(probe.changes)")
      #expect(probe.externalValues.map(\.fontSize) == [20, 21, 22, 23, 24], "each version once, in order")
      #expect(probe.changes.allSatisfy { $0.origin == .external })
      #expect(probe.errors.isEmpty)
      _ = child.finish()
    }
  }

  /// Versions that say the same value again, one spelled differently and one that changes only
  /// a key the type does not know, are not heard; the versions between them are, once each.
  @Test func versionsThatKeepTheValueAreNotHeard() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      writeFile(path, #"{"theme": "light", "fontSize": 13, "counter": 0, "tags": []}"#)
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: watchingOptions)
      let probe = ReloadProbe(storage)

      let versions = [
        #"{"theme": "dark", "fontSize": 13, "counter": 0, "tags": ["a"]}"#,
        #"{"tags":["a"],"counter":0,"fontSize":13,"theme":"dark"}"#,  // same value, other spelling
        #"{"theme": "dim", "fontSize": 13, "counter": 0, "tags": ["a"]}"#,
        #"{"theme": "dim", "fontSize": 13, "counter": 0, "tags": ["a"], "extra": 1}"#,  // unknown key only
        #"{"theme": "dim", "fontSize": 13, "counter": 0, "tags": ["a"], "extra": 2}"#,
        #"{"theme": "dusk", "fontSize": 13, "counter": 0, "tags": ["a"], "extra": 2}"#,
      ]
      for version in versions {
        // Each version replaced by `mv` in another process, and read before the next one.
        try shell("printf '%s\\n' '\(version)' > .next && mv .next settings.json", in: directory.path)
        let bytes = Array((version + "\n").utf8)
        #expect(waitUntil { storage.document.tracking.withLock { $0.seen?.bytes } == bytes }, "\(version)")
      }
      // The value is adopted before observers hear of it: wait for the observer, not the value.
      #expect(waitUntil { probe.externalValues.last?.theme == "dusk" }, "\(probe.changes)")
      #expect(probe.externalValues.map(\.theme) == ["dark", "dim", "dusk"], "\(probe.changes)")
      #expect(probe.changes.allSatisfy { $0.origin == .external })
      #expect(!storage.hasPendingChanges)
      #expect(probe.errors.isEmpty)
    }
  }
}
