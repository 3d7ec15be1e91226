import Glibc

/// A mutex with a condition variable, for threads that wait for each other's work (group
/// commit, scheduled saves).
///
/// `@unchecked Sendable`: the pthread mutex and condition are themselves thread-safe; the
/// state callers guard with them must only be touched inside ``withLock(_:)``.
public final class ConditionLock: @unchecked Sendable {
  @usableFromInline let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

  package init() {
    pthread_mutex_init(mutex, nil)
    var attributes = pthread_condattr_t()
    pthread_condattr_init(&attributes)
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
    pthread_cond_init(condition, &attributes)
    pthread_condattr_destroy(&attributes)
  }

  deinit {
    pthread_cond_destroy(condition)
    pthread_mutex_destroy(mutex)
    condition.deallocate()
    mutex.deallocate()
  }

  /// Runs `body` holding the mutex. `@inlinable` and `public`, so each caller gets it
  /// specialised (see ``Protected``).
  @inlinable
  public func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body()
  }

  /// Waits for a ``broadcast()``; call only inside ``withLock(_:)``. May wake spuriously:
  /// callers re-check their condition in a loop.
  package func wait() {
    pthread_cond_wait(condition, mutex)
  }

  /// Waits for a ``broadcast()`` or until `deadline`; call only inside ``withLock(_:)``. May
  /// wake spuriously or a little early: callers re-check their condition and the clock in a
  /// loop.
  ///
  /// The condition variable times out on `CLOCK_MONOTONIC` (glibc's
  /// `pthread_condattr_setclock` refuses `CLOCK_BOOTTIME` with `EINVAL`), while
  /// `ContinuousClock` reads `CLOCK_BOOTTIME` on Linux: the absolute time given to
  /// `pthread_cond_timedwait` is `CLOCK_MONOTONIC` now (``MachineStamp/now()``) plus what is
  /// left until `deadline`, never the instant's own value.
  package func wait(until deadline: ContinuousClock.Instant) {
    let remaining = max((deadline - .now).nanoseconds, 0)
    let (sum, overflow) = MachineStamp.now().addingReportingOverflow(remaining)
    let end = overflow ? Int64.max : sum
    var until = timespec(tv_sec: Int(end / 1_000_000_000), tv_nsec: Int(end % 1_000_000_000))
    pthread_cond_timedwait(condition, mutex, &until)
  }

  /// Wakes every waiter.
  package func broadcast() {
    pthread_cond_broadcast(condition)
  }
}
