import Glibc

/// The one clock of the package: every monotonic reading, deadline and elapsed time is a
/// `ContinuousClock.Instant` or a `Duration` (dates and file-name stamps use the wall clock,
/// `CLOCK_REALTIME`, which is another thing). See docs/ARCHITECTURE.md, "Time".
///
/// On Linux `ContinuousClock` reads `CLOCK_BOOTTIME` (the Swift runtime's `swift_get_time`),
/// which also counts time the machine spent suspended, where `CLOCK_MONOTONIC` does not. The
/// two agree on every interval during which the machine does not suspend; a C call that takes
/// an absolute time on `CLOCK_MONOTONIC` is given `now + (deadline - ContinuousClock.now)`
/// (see ``ConditionLock/wait(until:)``), never an instant's value.
extension ContinuousClock {
  /// Blocks the calling thread for `duration` (nothing for zero or less): the one blocking
  /// sleep of the package, for its own threads and callers' (not for async code).
  ///
  /// EINTR policy: a signal handler that runs meanwhile does not cut the sleep short; the sleep
  /// goes on for what remains, so the thread sleeps at least `duration`. A caller that must
  /// react to a signal promptly waits on a descriptor the handler writes to (`poll` on a
  /// signal pipe) or sleeps in short steps (100 ms at most) in a loop that checks its flag.
  /// The corresponding C function is `nanosleep` (relative, on `CLOCK_MONOTONIC`).
  package static func sleepThread(for duration: Duration) {
    guard duration > .zero else { return }
    var request = duration.timespec
    var remaining = timespec()
    while nanosleep(&request, &remaining) == -1 && errno == EINTR { request = remaining }
  }
}

/// A time stamp that leaves the process: written into a document or a pipe and compared
/// with another process's stamp (a test helper's, a benchmark peer written in C, Python's
/// `time.monotonic()`), which a `ContinuousClock.Instant` cannot do. It is
/// `CLOCK_MONOTONIC` in nanoseconds, the convention those peers share; `ContinuousClock`
/// reads `CLOCK_BOOTTIME`, so a stamp is never mixed with an `Instant`. Like the wall clock,
/// this is not for timing within a process.
package enum MachineStamp {
  /// `CLOCK_MONOTONIC` now, in nanoseconds. The corresponding C function is `clock_gettime`.
  package static func now() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
  }
}
