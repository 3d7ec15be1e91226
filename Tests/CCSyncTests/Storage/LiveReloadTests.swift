import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// Issue 4, "Reload and merge": a process holding a `CodableStorage` on a file sees another
/// process's save in its value, its `values` sequence and its observers, through the file
/// watcher (no polling), merged with its own pending edits, and never echoes its own writes.
/// Process A is always a helper child; process B is this test process.
@Suite struct LiveReloadTests {
  /// The test and its consumer run on a thread of their own, not the cooperative pool, which
  /// long blocking tests can hold for longer than the deadlines here (`DedicatedExecutor`).
  @Test func anotherProcessSaveReachesValueObserversAndValues() async throws {
    try await withTaskExecutorPreference(DedicatedExecutor.shared) {
      try await anotherProcessSaveReachesValueObserversAndValuesBody()
    }
  }

  private func anotherProcessSaveReachesValueObserversAndValuesBody() async throws {
    try await withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: watchingOptions)
      let probe = ReloadProbe(storage)
      let streamed = Protected<[String]>([])
      let consumer = Task(executorPreference: DedicatedExecutor.shared) {
        for await value in storage.values {
          streamed.withLock { $0.append(value.theme) }
          if value.theme == "dark" { return true }
        }
        return false
      }
      defer { consumer.cancel() }
      // The sequence starts with the current value; a consumer that is late sees only the newest.
      #expect(await waitUntilAsync { streamed.withLock { $0 } == ["light"] })

      let child = try startSession(path)
      #expect(child.request("set theme dark") != nil)
      #expect(await waitUntilAsync { storage.wrappedValue.theme == "dark" })
      #expect(await waitUntilAsync { probe.externalValues.contains { $0.theme == "dark" } })
      #expect(probe.changes.map(\.origin) == [.external], "one change, from the other process")
      #expect(probe.changes.first?.value == SharedSettings(theme: "dark"))
      #expect(await waitUntilAsync { streamed.withLock { $0.last } == "dark" })
      #expect(streamed.withLock { $0 } == ["light", "dark"])
      #expect(await consumer.value)
      #expect(!storage.hasPendingChanges, "an external value is not a local edit")
      #expect(storage.fileState == .valid)
      #expect(probe.errors.isEmpty)
      _ = child.finish()
    }
  }

  @Test func pendingLocalEditsSurviveAnExternalChangeToAnotherField() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      writeFile(path, #"{"theme": "light", "fontSize": 13}"#)
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .afterIdle(.seconds(60)), options: watchingOptions)
      let probe = ReloadProbe(storage)
      storage.wrappedValue.theme = "dark"
      #expect(storage.hasPendingChanges)
      let before = identity(of: path)

      let child = try startSession(path)
      #expect(child.request("set fontSize 20") != nil)
      #expect(waitUntil { storage.wrappedValue.fontSize == 20 })
      #expect(storage.wrappedValue == SharedSettings(theme: "dark", fontSize: 20), "both: the local edit and the external change")
      #expect(storage.hasPendingChanges, "the local edit is still unsaved")
      #expect(waitUntil { probe.changes.map(\.origin) == [.local, .external] }, "\(probe.changes)")
      #expect(probe.changes.last?.value == SharedSettings(theme: "dark", fontSize: 20))
      #expect(identity(of: path) != before)
      #expect(try fileJSON(path).objectValue?["theme"] == "light", "nothing written before the idle delay")

      try storage.flush()
      #expect(try fileJSON(path).objectValue?["theme"] == "dark")
      #expect(try fileJSON(path).objectValue?["fontSize"] == 20)
      #expect(!storage.hasPendingChanges)
      #expect(waitUntil { child.request("get", reply: "value")?.contains(#""theme":"dark","fontSize":20"#) == true },
              "A reloads B's save too")
      #expect(probe.errors.isEmpty)
      _ = child.finish()
    }
  }

  /// A process's own saves come back to it as directory events; they must cause no reload,
  /// no `.external` callback and no write. "Nothing happened" is made observable with a
  /// sentinel: a second storage on another file in the same directory shares the watcher
  /// thread, which delivers events in order, so once it has heard a later change, every
  /// event for the own saves has been handled.
  @Test func ownSavesCauseNoReloadNoCallbackAndNoWrite() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      let sentinelPath = directory.file("sentinel.json")
      let reloads = Protected(0)
      let logger = DiagnosticLog(minimumLevel: .debug) { _, message in
        if message.contains("reloading") { reloads.withLock { $0 += 1 } }
      }
      var options = watchingOptions
      options.logger = logger
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .immediate, options: options)
      let sentinel = CodableStorage(defaultValue: SharedSettings(), path: sentinelPath, updateMode: .manual, options: watchingOptions)
      let probe = ReloadProbe(storage)
      for theme in ["a", "b", "c", "d", "e"] { storage.wrappedValue.theme = theme }
      for size in 1...20 { storage.wrappedValue.fontSize = size }
      let last = identity(of: path)
      #expect(last != nil)

      let outcome = try ChildProcess.run(try testHelper(), ["count-up", sentinelPath, "1"])
      #expect(outcome.succeeded, "\(outcome.standardError)")
      #expect(waitUntil { sentinel.wrappedValue.counter == 1 })

      #expect(reloads.withLock { $0 } == 0, "own saves reloaded")
      #expect(probe.changes.filter { $0.origin == .external }.isEmpty, "own saves heard as external: \(probe.changes)")
      #expect(probe.changes.count == 25)
      #expect(identity(of: path) == last, "something wrote the file after the own saves")
      #expect(!storage.hasPendingChanges)
      #expect(storage.wrappedValue == SharedSettings(theme: "e", fontSize: 20))
      #expect(probe.errors.isEmpty)
    }
  }

  @Test func deletedFileKeepsTheValueAndARecreatedFileIsReloaded() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      writeFile(path, #"{"theme": "dark"}"#)
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: watchingOptions)
      let probe = ReloadProbe(storage)
      #expect(storage.wrappedValue.theme == "dark")

      try shell("rm settings.json", in: directory.path)
      #expect(waitUntil { storage.fileState == .missing })
      #expect(storage.wrappedValue.theme == "dark", "the value is kept")
      #expect(!storage.hasPendingChanges)

      try shell(#"printf '{"theme": "blue", "fontSize": 9}' > .new && mv .new settings.json"#, in: directory.path)
      #expect(waitUntil { storage.wrappedValue.theme == "blue" })
      #expect(storage.wrappedValue.fontSize == 9)
      #expect(storage.fileState == .valid)
      // Observers hear a change just after the value takes it: wait for them too.
      #expect(waitUntil { probe.externalValues.map(\.theme) == ["blue"] }, "\(probe.externalValues)")
      #expect(probe.errors.isEmpty)
    }
  }

  @Test func invalidFileIsReportedOnceKeepsTheValueAndAFixedFileIsReloaded() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      writeFile(path, #"{"theme": "dark"}"#)
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .manual, options: watchingOptions)
      let probe = ReloadProbe(storage)

      try shell(#"printf '{"theme": oops' > .new && mv .new settings.json"#, in: directory.path)
      #expect(waitUntil { probe.errors.count >= 1 })
      guard case .invalid(let message) = storage.fileState else {
        Issue.record("expected .invalid, got \(storage.fileState)")
        return
      }
      #expect(message.contains(path))
      #expect(storage.wrappedValue.theme == "dark", "the value is kept")
      // The same bytes again (a new inode) and a touch: looked at again, not reported again.
      try shell(#"printf '{"theme": oops' > .new && mv .new settings.json && touch settings.json"#, in: directory.path)
      #expect(!waitUntil(deadline: .milliseconds(400)) { probe.errors.count > 1 }, "reported again: \(probe.errors)")
      #expect(probe.errors.count == 1)

      try shell(#"printf '{"theme": "fixed"}' > .new && mv .new settings.json"#, in: directory.path)
      #expect(waitUntil { storage.wrappedValue.theme == "fixed" })
      #expect(storage.fileState == .valid)
      #expect(storage.lastError == nil)
      #expect(!storage.hasPendingChanges)
      #expect(waitUntil { probe.externalValues.map(\.theme) == ["fixed"] }, "\(probe.externalValues)")
    }
  }

  /// 50 saves as fast as another process can make them: the observer may miss some (they
  /// coalesce), but hears each value it hears once, in order, and always the last one.
  @Test func aBurstOfWritesArrivesInOrderEndingWithTheLast() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      // A short idle delay: if a reload counted as a local edit, a write would follow at once.
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .afterIdle(.milliseconds(20)), options: watchingOptions)
      let probe = ReloadProbe(storage)
      let outcome = try ChildProcess.run(try testHelper(), ["count-up", path, "50"])
      #expect(outcome.succeeded, "\(outcome.standardError)")
      let written = identity(of: path)
      #expect(waitUntil { storage.wrappedValue.counter == 50 })
      #expect(!waitUntil(deadline: .milliseconds(300)) { identity(of: path) != written }, "reloading wrote the file")
      #expect(waitUntil { probe.externalValues.last?.counter == 50 })
      let heard = probe.externalValues.map(\.counter)
      #expect(heard.last == 50)
      #expect(zip(heard, heard.dropFirst()).allSatisfy { $0 < $1 }, "out of order or repeated: \(heard)")
      #expect(probe.changes.allSatisfy { $0.origin == .external })
      #expect(!storage.hasPendingChanges)
      #expect(probe.errors.isEmpty)
    }
  }

  /// This process saves while another one does: whichever order the watcher's reloads and
  /// this process's own save results arrive in, the value ends as the file, at once (well
  /// before the 5 s safety re-check could repair a stale value), and observers last hear it.
  @Test func concurrentWritersConvergeOnTheFile() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("settings.json")
      let storage = CodableStorage(defaultValue: SharedSettings(), path: path, updateMode: .immediate, options: watchingOptions)
      let probe = ReloadProbe(storage)
      let child = try ChildProcess(try testHelper(), ["count-up", path, "200"])
      var size = 0
      while child.isRunning && size < 2000 {
        size += 1
        storage.wrappedValue.fontSize = size
      }
      #expect(child.wait().succeeded)
      let settled = waitUntil(deadline: .seconds(2)) {
        storage.wrappedValue.counter == 200 && storage.wrappedValue.fontSize == size
      }
      #expect(settled, "stale: \(storage.wrappedValue), file \((try? fileJSON(path)).map { "\($0)" } ?? "?")")
      let file = try fileJSON(path).objectValue
      #expect(file?["counter"] == 200)
      #expect(file?["fontSize"] == .number(JSONNumber(size)))
      #expect(waitUntil { probe.changes.last?.value == storage.wrappedValue }, "\(String(describing: probe.changes.last))")
      #expect(!storage.hasPendingChanges)
      #expect(probe.errors.isEmpty)
    }
  }
}
