import CCSyncSystem

/// Keeps a busy neighbour from costing the watcher thread a wake-up per event.
///
/// inotify watches directories, so every file written next to a watched one wakes the
/// thread, only for it to find that the event names nobody's file. A program rewriting a
/// neighbour in a tight loop (thousands of saves a second, five or six events each) made the
/// thread wake thousands of times a second, and nearly all of that time was the kernel's
/// context switching, not the events. Once wake-ups that concern nobody pass ``threshold``
/// within ``window``, the thread pauses ``pause`` after each of them and then reads, without
/// waiting, what queued meanwhile: the events of a millisecond in one batch, one context
/// switch per pause.
///
/// Once on, the pause stays on while the noise goes on: a window with at least ``sustain``
/// unwatched wake-ups keeps it for the next. The threshold alone cannot keep it: paused, the
/// thread wakes at most once a ``pause`` (100 times a window, under the threshold), so the
/// pause went off every other window: a window of unpaused wake-ups (at the neighbour's
/// rate) for each paused one.
///
/// The price: while the neighbour keeps churning, a change to a watched file may be seen up
/// to ``pause`` later. A quiet directory never pauses: a single save (its temp file, then the
/// rename) is nowhere near the threshold.
struct NoiseGate {
  /// Wake-ups for unwatched names, within one ``window``, that turn the pause on.
  static let threshold = 200
  /// Wake-ups for unwatched names, within one ``window``, that keep the pause on for the next
  /// window once it is on: half of the most a paused thread makes (one per ``pause``).
  static let sustain = 50
  /// 100 ms: the threshold is 2000 unwatched wake-ups a second.
  static let window: Duration = .milliseconds(100)
  /// 1 ms: at most about a thousand wake-ups a second while the noise lasts.
  static let pause: Duration = .milliseconds(1)

  /// `nil` before the first wake-up, as if the last window were long over.
  private var windowStart: ContinuousClock.Instant?
  private var count = 0
  private var pausing = false

  /// Records a wake-up that concerned no watched file, at `now`, and tells whether the thread
  /// should pause before it waits again.
  mutating func recordUnwatchedWakeUp(now: ContinuousClock.Instant) -> Bool {
    let sinceWindowStart = windowStart.map { now - $0 }
    if sinceWindowStart.map({ $0 >= NoiseGate.window }) ?? true {
      // The window just ended decides for this one; a gap of a whole window ends the pause.
      let endedJustNow = sinceWindowStart.map { $0 < NoiseGate.window * 2 } ?? false
      pausing = endedJustNow && count >= (pausing ? NoiseGate.sustain : NoiseGate.threshold)
      windowStart = now
      count = 0
    }
    count += 1
    if count >= NoiseGate.threshold { pausing = true }
    return pausing
  }
}
