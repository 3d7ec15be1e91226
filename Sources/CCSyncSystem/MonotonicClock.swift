import Glibc

/// Time measured on the monotonic clock, which no one can set: for timeouts, deadlines and
/// durations (never for dates).
package enum MonotonicClock {
  /// Seconds since an arbitrary point (the boot), with nanosecond resolution.
  /// The corresponding C function is `clock_gettime` with `CLOCK_MONOTONIC`.
  package static func now() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
  }

  /// Suspends the calling thread for `seconds`, or less when a signal handler runs meanwhile:
  /// callers that wait for something poll it in a loop, and see it sooner that way.
  /// The corresponding C function is `nanosleep`.
  package static func sleep(seconds: Double) {
    let nanoseconds = Int64((max(seconds, 0) * 1e9).rounded())
    var request = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
    _ = nanosleep(&request, nil)
  }
}
