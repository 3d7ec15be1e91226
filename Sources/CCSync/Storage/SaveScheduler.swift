import CCSyncSystem
import CCSyncJSON
import Dispatch

/// Decides when a storage's pending changes are written, per its ``UpdateMode``, and retries a
/// failed write with backoff (0.1 s doubling to 30 s) while keeping the change pending.
///
/// The timers of every storage fire on one queue (``SaveScheduler/timers``), which only hands
/// the write to the threads every storage's automatic saves share (``SaveScheduler/pool``):
/// `save` runs there and returns whether it succeeded. A save that waits (for another
/// process's lock) holds up the other storages' automatic saves for at most
/// ``SaveScheduler/spillAfter``; then they get a spill thread (docs/ARCHITECTURE.md, "Threads").
/// `Sendable`: timing state is behind a `Protected`; a timer that fires for a deadline no
/// longer scheduled does nothing, so two firing at once write once.
final class SaveScheduler: Sendable {
  private struct Timing {
    var firstUnsavedChange: ContinuousClock.Instant?
    /// `nil` until the first change, which counts as long ago.
    var lastChange: ContinuousClock.Instant?
    /// When the last write started, then when it ended: a throttled change made while a
    /// write runs is due an interval after that write began, not at once.
    var lastWrite: ContinuousClock.Instant?
    /// Zero while no retry is pending.
    var retryDelay: Duration = .zero
    var scheduled: ContinuousClock.Instant?
  }

  private let mode: UpdateMode
  private let timing = Protected(Timing())
  /// The one queue every storage's save timers fire on.
  private static let timers = DispatchQueue(label: "ccsync.save-timers")
  /// How long an automatic save may run before waiting saves of other storages get a thread
  /// of their own: longer than a healthy `fsync`, since a save delayed is still a save.
  static let spillAfter: Duration = .seconds(1)
  /// The threads every storage's automatic saves share: two, and spill threads while saves wait.
  static let pool = SpillingWorkPool(name: "ccsync-save", threadsKept: 2, spillAfter: spillAfter)
  private let save: @Sendable () -> Bool

  init(mode: UpdateMode, save: @escaping @Sendable () -> Bool) {
    self.mode = mode
    self.save = save
  }

  /// A local change happened: make sure a write is scheduled.
  func valueChanged() {
    let now = ContinuousClock.now
    let due: ContinuousClock.Instant? = timing.withLock { timing in
      timing.lastChange = now
      if timing.firstUnsavedChange == nil { timing.firstUnsavedChange = now }
      return scheduleUnlessScheduled(&timing, now: now)
    }
    if let due { arm(at: due) }
  }

  /// A write succeeded (this scheduler's or an explicit save), or found nothing left to
  /// write. `stillPending`: local changes made while it ran were not in it; they are due as
  /// changes made now would be, and a write is scheduled for them (unless one already is),
  /// so they are not left waiting for the next edit. `checkedAt`: the instant taken
  /// just before `stillPending` was looked up; a change reported since then counts as still
  /// pending, since the look may have missed it.
  func didSave(stillPending: Bool, checkedAt: ContinuousClock.Instant) {
    let now = ContinuousClock.now
    let due: ContinuousClock.Instant? = timing.withLock { timing in
      timing.lastWrite = now
      timing.retryDelay = .zero
      guard stillPending || timing.lastChange.map({ $0 >= checkedAt }) == true else {
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
  private func scheduleUnlessScheduled(_ timing: inout Timing, now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
    guard let due = dueTime(timing, now: now) else { return nil }
    if let scheduled = timing.scheduled, scheduled <= due { return nil }
    timing.scheduled = due
    return due
  }

  /// When the armed timer is due, if one is (for tests).
  var scheduledDue: ContinuousClock.Instant? { timing.withLock { $0.scheduled } }

  /// Whether a local change is waiting to be written (for tests).
  var hasUnsavedChange: Bool { timing.withLock { $0.firstUnsavedChange != nil } }

  /// An automatic write failed: try again after the next backoff step.
  func didFail() {
    let due = timing.withLock { timing in
      timing.retryDelay = timing.retryDelay == .zero ? .milliseconds(100) : min(timing.retryDelay * 2, .seconds(30))
      let due = ContinuousClock.now + timing.retryDelay
      timing.scheduled = due
      return due
    }
    arm(at: due)
  }

  /// When the pending change is due under the mode, or `nil` when the mode never writes on
  /// its own.
  /// A delay too long for Dispatch (hundreds of years) is never due rather than due at once.
  private func dueTime(_ timing: Timing, now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
    switch mode {
    case .manual, .immediate:
      return nil
    case .afterIdle(let idleDuration, _):
      // No change yet counts as one long ago: its idle time is over.
      guard let lastChange = timing.lastChange else { return now }
      let idle = lastChange + idleDuration
      let latest = (timing.firstUnsavedChange ?? now) + (mode.maximumIdleDelay ?? idleDuration)
      return min(idle, latest)
    case .throttled(let interval):
      guard let lastWrite = timing.lastWrite else { return now }
      return max(now, lastWrite + interval)
    }
  }

  private func arm(at due: ContinuousClock.Instant) {
    let delay = max(.zero, due - .now).nanoseconds
    SaveScheduler.timers.asyncAfter(deadline: .now() + .nanoseconds(Int(delay))) { [weak self] in
      guard self != nil else { return }
      SaveScheduler.pool.submit { [weak self] in self?.fire(armedFor: due) }
    }
  }

  /// Runs when the timer armed for `due` expires: writes if the change is due (or a retry
  /// is), otherwise re-arms for the new deadline (more changes came in meanwhile). A timer
  /// that was replaced by another (``scheduleUnlessScheduled(_:now:)``) does nothing.
  private func fire(armedFor due: ContinuousClock.Instant) {
    enum Action { case write, rearm(ContinuousClock.Instant), nothing }
    let action = timing.withLock { timing -> Action in
      guard timing.scheduled == due else { return .nothing }
      timing.scheduled = nil
      guard timing.firstUnsavedChange != nil || timing.retryDelay > .zero else { return .nothing }
      let now = ContinuousClock.now
      if timing.retryDelay == .zero, let due = dueTime(timing, now: now), due > now + .milliseconds(1) {
        timing.scheduled = due
        return .rearm(due)
      }
      timing.lastWrite = now
      return .write
    }
    switch action {
    case .nothing: return
    case .rearm(let due): arm(at: due)
    case .write: if !save() { didFail() }  // a successful save tells `didSave` itself
    }
  }
}
