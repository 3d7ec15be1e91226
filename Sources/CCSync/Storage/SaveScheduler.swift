import CCSyncSystem
import CCSyncJSON
import Dispatch

/// Decides when a storage's pending changes are written, per its ``UpdateMode``, and retries a
/// failed write with backoff (0.1 s doubling to 30 s) while keeping the change pending.
///
/// The write itself runs on a private serial queue through `save`, which returns whether it
/// succeeded. `Sendable`: timing state is behind a `Protected`; the timer is only touched on `queue`.
final class SaveScheduler: Sendable {
  private struct Timing {
    var firstUnsavedChange: Int64?
    var lastChange: Int64 = 0
    var lastWrite: Int64?
    var retryDelay: Int64 = 0
    var scheduled: Int64?
  }

  private let mode: UpdateMode
  private let timing = Protected(Timing())
  private let queue = DispatchQueue(label: "ccsync.save")
  private let save: @Sendable () -> Bool

  init(mode: UpdateMode, save: @escaping @Sendable () -> Bool) {
    self.mode = mode
    self.save = save
  }

  /// A local change happened: make sure a write is scheduled.
  func valueChanged() {
    let now = FileSystem.monotonicNanoseconds()
    let due: Int64? = timing.withLock { timing in
      timing.lastChange = now
      if timing.firstUnsavedChange == nil { timing.firstUnsavedChange = now }
      return scheduleUnlessScheduled(&timing, now: now)
    }
    if let due { arm(at: due) }
  }

  /// A write succeeded (this scheduler's or an explicit save), or found nothing left to
  /// write. `stillPending`: local changes made while it ran were not in it; they are due as
  /// changes made now would be, and a write is scheduled for them (unless one already is),
  /// so they are not left waiting for the next edit. `checkedAt`: the monotonic time taken
  /// just before `stillPending` was looked up; a change reported since then counts as still
  /// pending, since the look may have missed it.
  func didSave(stillPending: Bool, checkedAt: Int64) {
    let now = FileSystem.monotonicNanoseconds()
    let due: Int64? = timing.withLock { timing in
      timing.lastWrite = now
      timing.retryDelay = 0
      guard stillPending || timing.lastChange >= checkedAt else {
        timing.firstUnsavedChange = nil
        return nil
      }
      timing.firstUnsavedChange = now
      return scheduleUnlessScheduled(&timing, now: now)
    }
    if let due { arm(at: due) }
  }

  /// Records when the pending change is due and returns it, for the caller to ``arm(at:)``
  /// once unlocked; `nil` when a timer is already set for that time or earlier (it re-checks
  /// the deadline when it fires), or when the mode never writes on its own. A timer set for
  /// later (a backoff retry that a success made moot) is replaced: it fires for nothing.
  private func scheduleUnlessScheduled(_ timing: inout Timing, now: Int64) -> Int64? {
    guard let due = dueTime(timing, now: now) else { return nil }
    if let scheduled = timing.scheduled, scheduled <= due { return nil }
    timing.scheduled = due
    return due
  }

  /// When the armed timer is due, if one is (for tests).
  var scheduledDue: Int64? { timing.withLock { $0.scheduled } }

  /// Whether a local change is waiting to be written (for tests).
  var hasUnsavedChange: Bool { timing.withLock { $0.firstUnsavedChange != nil } }

  /// An automatic write failed: try again after the next backoff step.
  func didFail() {
    let due = timing.withLock { timing in
      timing.retryDelay = timing.retryDelay == 0 ? 100_000_000 : min(timing.retryDelay * 2, 30_000_000_000)
      let due = FileSystem.monotonicNanoseconds() + timing.retryDelay
      timing.scheduled = due
      return due
    }
    arm(at: due)
  }

  /// When the pending change is due under the mode, or `nil` when the mode never writes on
  /// its own.
  private func dueTime(_ timing: Timing, now: Int64) -> Int64? {
    switch mode {
    case .manual, .immediate:
      return nil
    case .afterIdle(let idleDuration, _):
      let idle = SaveScheduler.instant(timing.lastChange, after: idleDuration)
      let latest = SaveScheduler.instant(timing.firstUnsavedChange ?? now, after: mode.maximumIdleDelay ?? idleDuration)
      return min(idle, latest)
    case .throttled(let interval):
      guard let lastWrite = timing.lastWrite else { return now }
      return max(now, SaveScheduler.instant(lastWrite, after: interval))
    }
  }

  /// `start` plus `duration` on the monotonic clock, saturating: a delay too long to express
  /// (hundreds of years) is never due rather than due at once.
  private static func instant(_ start: Int64, after duration: Duration) -> Int64 {
    let (sum, overflow) = start.addingReportingOverflow(duration.nanoseconds)
    return overflow ? (duration < .zero ? .min : .max) : sum
  }

  private func arm(at due: Int64) {
    let delay = max(0, due - FileSystem.monotonicNanoseconds())
    queue.asyncAfter(deadline: .now() + .nanoseconds(Int(delay))) { [weak self] in
      self?.fire(armedFor: due)
    }
  }

  /// Runs when the timer armed for `due` expires: writes if the change is due (or a retry
  /// is), otherwise re-arms for the new deadline (more changes came in meanwhile). A timer
  /// that was replaced by another (``scheduleUnlessScheduled(_:now:)``) does nothing.
  private func fire(armedFor due: Int64) {
    enum Action { case write, rearm(Int64), nothing }
    let action = timing.withLock { timing -> Action in
      guard timing.scheduled == due else { return .nothing }
      timing.scheduled = nil
      guard timing.firstUnsavedChange != nil || timing.retryDelay > 0 else { return .nothing }
      let now = FileSystem.monotonicNanoseconds()
      if timing.retryDelay == 0, let due = dueTime(timing, now: now), due > now + 1_000_000 {
        timing.scheduled = due
        return .rearm(due)
      }
      return .write
    }
    switch action {
    case .nothing: return
    case .rearm(let due): arm(at: due)
    case .write: if !save() { didFail() }  // a successful save tells `didSave` itself
    }
  }
}
