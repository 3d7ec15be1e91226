import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// Reloads run in order, one at a time per storage, on the watcher thread that read the event
/// or on the reload pool (docs/ARCHITECTURE.md, "A reload, step by step"): an observer that
/// blocks holds up its own storage's later reloads and nothing else.
@Suite struct ReloadIsolationTests {
  @Test func aBlockedObserverOfOneFileDoesNotHoldUpAnotherFilesReload() throws {
    try withTemporaryDirectory { directory in
      let first = CodableStorage(defaultValue: SharedSettings(), path: directory.file("first.json"), updateMode: .manual, options: watchingOptions)
      let second = CodableStorage(defaultValue: SharedSettings(), path: directory.file("second.json"), updateMode: .manual, options: watchingOptions)
      let gate = ConditionLock()
      let state = Protected((entered: false, released: false))
      let blocking = first.observe { _ in
        state.withLock { $0.entered = true }
        gate.withLock { while !state.withLock({ $0.released }) { gate.wait() } }
      }
      defer {
        state.withLock { $0.released = true }
        gate.withLock { gate.broadcast() }
        blocking.cancel()
      }
      let secondProbe = ReloadProbe(second)

      let writer = try startSession(directory.file("first.json"))
      #expect(writer.request("set theme first") != nil)
      #expect(waitUntil { state.withLock { $0.entered } }, "the first storage's observer never ran")

      let otherWriter = try startSession(directory.file("second.json"))
      #expect(otherWriter.request("set theme second") != nil)
      #expect(waitUntil { second.wrappedValue.theme == "second" }, "the second file's reload waited behind the blocked observer")
      #expect(waitUntil { secondProbe.externalValues.contains { $0.theme == "second" } }, "the second storage's observer did not hear it")
      #expect(state.withLock { !$0.released }, "the first observer is still blocked")

      state.withLock { $0.released = true }
      gate.withLock { gate.broadcast() }
      _ = writer.finish()
      _ = otherWriter.finish()
    }
  }

  /// Hints that arrive while a reload runs become one more reload after it, with everything
  /// either asked for.
  @Test func hintsArrivingDuringAReloadAreMergedIntoOneMore() {
    let queue = ReloadQueue()
    let gate = ConditionLock()
    let seen = Protected<[ChangeHint]>([])
    let open = Protected(false)
    let reload: @Sendable (ChangeHint) -> Void = { hint in
      seen.withLock { $0.append(hint) }
      gate.withLock { while !open.withLock({ $0 }) { gate.wait() } }
    }
    queue.schedule(ChangeHint(contentMayDiffer: false, isRequestedRecheck: false, description: "first"), reload: reload)
    #expect(waitUntil { seen.withLock { $0.count } == 1 })
    queue.schedule(ChangeHint(contentMayDiffer: true, isRequestedRecheck: false, description: "second"), reload: reload)
    queue.schedule(ChangeHint(contentMayDiffer: false, isRequestedRecheck: true, description: "third"), reload: reload)
    open.withLock { $0 = true }
    gate.withLock { gate.broadcast() }
    #expect(waitUntil { seen.withLock { $0.count } == 2 })
    let merged = seen.withLock { $0[1] }
    #expect(merged.contentMayDiffer, "the in-place event's request to compare bytes is kept")
    #expect(!merged.isRequestedRecheck, "an event that may have changed the bytes starts a new grace period")
    #expect(merged.description == "third")
  }

  /// A reload running inline on a watcher thread (``InlineReload``) is not run again on
  /// another watcher thread that got a hint meanwhile: that one returns at once, and the
  /// hints become one more reload after the first, on the pool.
  @Test func anInlineReloadIsNeverRunTwiceAtOnceAndLaterHintsFollowIt() throws {
    let queue = ReloadQueue()
    let gate = ConditionLock()
    let open = Protected(false)
    let record = Protected((running: 0, mostAtOnce: 0, hints: [ChangeHint](), threads: [UInt]()))
    let reload: @Sendable (ChangeHint) -> Void = { hint in
      record.withLock {
        $0.running += 1
        $0.mostAtOnce = max($0.mostAtOnce, $0.running)
        $0.hints.append(hint)
        $0.threads.append(ThreadIdentity.current)
      }
      gate.withLock { while !open.withLock({ $0 }) { gate.wait() } }
      record.withLock { $0.running -= 1 }
    }
    let first = ChangeHint(contentMayDiffer: false, isRequestedRecheck: false, description: "first")
    let inlineThread = Protected<UInt?>(nil)
    let thread = try CCSyncSystem.BackgroundThread(name: "test-inline") {
      inlineThread.withLock { $0 = ThreadIdentity.current }
      InlineReload.permitting(true) { queue.schedule(first, reload: reload) }
    }
    defer {
      open.withLock { $0 = true }
      gate.withLock { gate.broadcast() }
      thread.join()
    }
    #expect(waitUntil { record.withLock { $0.hints.count } == 1 }, "the first reload never ran")
    #expect(record.withLock { $0.threads } == [inlineThread.withLock { $0 }], "the permitted reload did not run inline")

    // Another watcher thread's hints while it runs: merged, and this thread is not held.
    InlineReload.permitting(true) {
      queue.schedule(ChangeHint(contentMayDiffer: true, isRequestedRecheck: false, description: "second"), reload: reload)
    }
    queue.schedule(ChangeHint(contentMayDiffer: false, isRequestedRecheck: false, description: "third"), reload: reload)
    #expect(record.withLock { $0.hints.count } == 1, "a second reload started while the first ran")

    open.withLock { $0 = true }
    gate.withLock { gate.broadcast() }
    #expect(waitUntil { record.withLock { $0.hints.count } == 2 }, "the hints that came meanwhile were not reloaded")
    let seen = record.withLock { $0 }
    #expect(seen.mostAtOnce == 1, "two reloads of one queue ran at once")
    #expect(seen.hints[1].contentMayDiffer && seen.hints[1].description == "third", "\(seen.hints[1])")
    #expect(seen.threads[1] != ThreadIdentity.current, "the merged reload ran on the hinting thread")
  }

  /// With the watcher's permission, an external change reaches the observer on the watcher
  /// thread that read its event: no other thread is woken in between.
  @Test func anExternalChangeIsReloadedOnTheWatcherThread() throws {
    try withTemporaryDirectory { directory in
      let storage = CodableStorage(defaultValue: SharedSettings(), path: directory.file("settings.json"), updateMode: .manual, options: watchingOptions)
      let threadNames = Protected<[String]>([])
      let observation = storage.observe { change in
        guard change.origin == .external else { return }
        let name = contents("/proc/thread-self/comm") ?? "?"
        threadNames.withLock { $0.append(name.trimmingCharacters(in: .newlines)) }
      }
      defer { observation.cancel() }
      let writer = try startSession(directory.file("settings.json"))
      // One reload in a quiet turn runs inline; several writes, so that a turn the machine's
      // load delayed past the inline budget (handed to the pool) cannot fail the test.
      for index in 1...5 {
        #expect(writer.request("set fontSize \(index)") != nil)
        #expect(waitUntil { storage.wrappedValue.fontSize == index })
      }
      _ = writer.finish()
      #expect(threadNames.withLock { $0 }.contains("ccsync-watcher"), "no reload ran on the watcher thread: \(threadNames.withLock { $0 })")
    }
  }

  @Test func aRequestedRecheckSurvivesAPeriodicCheckButNotAnEvent() {
    let requested = ChangeHint(contentMayDiffer: true, isRequestedRecheck: true, description: "requested")
    let periodic = ChangeHint(contentMayDiffer: false, isRequestedRecheck: false, description: "safetyRecheck")
    let event = ChangeHint(contentMayDiffer: true, isRequestedRecheck: false, description: "inPlaceWrite")
    #expect(requested.merged(with: periodic).isRequestedRecheck)
    #expect(periodic.merged(with: requested).isRequestedRecheck)
    #expect(!requested.merged(with: event).isRequestedRecheck)
    #expect(!event.merged(with: requested).isRequestedRecheck)
    #expect(requested.merged(with: requested).isRequestedRecheck)
  }
}
