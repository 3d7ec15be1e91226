import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// Reloads run off the watcher thread, one queue per storage (docs/ARCHITECTURE.md, "A
/// reload, step by step"): an observer that blocks holds up its own storage's later reloads
/// and nothing else.
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
