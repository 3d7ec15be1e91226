import Dispatch
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// `SaveScheduler` on its own, with a counting save: the timing rules that a storage's
/// automatic writes rely on.
@Suite struct SaveSchedulerTests {
  /// After failed writes armed a long backoff (25.6 s here), a write that succeeds (an
  /// explicit `save()`) ends the backoff: the next edit is due after the idle time, not when
  /// the old retry would have fired.
  @Test func aSuccessEndsTheBackoffForTheNextEdit() {
    let scheduler = SaveScheduler(mode: .afterIdle(.milliseconds(50))) { true }
    for _ in 0..<9 { scheduler.didFail() }
    let start = ContinuousClock.now
    scheduler.didSave(stillPending: false, checkedAt: start)
    scheduler.valueChanged()
    let due = scheduler.scheduledDue
    #expect(due != nil && due! - start < .seconds(5), "due in \(due.map { $0 - start } ?? .seconds(-1))")
  }

  /// An edit made after a save looked for pending changes (and found none), but before it
  /// told the scheduler, is still written: the save's "nothing pending" does not cancel it.
  @Test func anEditAfterTheSaveLookedIsStillWritten() {
    let saves = Protected(0)
    let scheduler = SaveScheduler(mode: .afterIdle(.milliseconds(20))) {
      saves.withLock { $0 += 1 }
      return true
    }
    let looked = ContinuousClock.now
    scheduler.valueChanged()  // the edit, between the look and the report
    scheduler.didSave(stillPending: false, checkedAt: looked)
    #expect(waitUntil { saves.withLock { $0 } == 1 }, "the edit was never written")
  }

  /// A save that found nothing pending when it looked, with no edit since, leaves nothing due.
  @Test func nothingPendingLeavesNothingDue() {
    let scheduler = SaveScheduler(mode: .afterIdle(.milliseconds(20))) { true }
    scheduler.valueChanged()
    scheduler.didSave(stillPending: false, checkedAt: .now)
    #expect(!scheduler.hasUnsavedChange)
  }

  /// A change made while the throttled write of the first one runs (its file may already be
  /// in place) waits out the interval: the interval runs from when that write started, not
  /// from when it reported back, so two writes never come a moment apart.
  @Test func aChangeWhileAThrottledWriteRunsWaitsTheInterval() {
    let started = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    let saves = Protected(0)
    let scheduler = SaveScheduler(mode: .throttled(.seconds(1))) {
      let first = saves.withLock { count -> Bool in
        count += 1
        return count == 1
      }
      if first {
        started.signal()
        release.wait()
      }
      return true
    }
    scheduler.valueChanged()  // the first change: written at once
    #expect(started.wait(timeout: .now() + .seconds(10)) == .success, "the first change was not written at once")
    let during = ContinuousClock.now
    scheduler.valueChanged()  // made while that write runs
    let due = scheduler.scheduledDue
    release.signal()
    #expect(due.map { $0 - during > .milliseconds(900) } == true, "due \(due.map { $0 - during } ?? .zero) after the change")
  }
}
