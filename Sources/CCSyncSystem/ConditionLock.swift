import Glibc

/// A mutex with a condition variable, for threads that wait for each other's work (group
/// commit, scheduled saves).
///
/// `@unchecked Sendable`: the pthread mutex and condition are themselves thread-safe; the
/// state callers guard with them must only be touched inside ``withLock(_:)``.
package final class ConditionLock: @unchecked Sendable {
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
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

  /// Runs `body` holding the mutex.
  package func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body()
  }

  /// Waits for a ``broadcast()``; call only inside ``withLock(_:)``. May wake spuriously:
  /// callers re-check their condition in a loop.
  package func wait() {
    pthread_cond_wait(condition, mutex)
  }

  /// Waits for a ``broadcast()`` or until `deadline` (monotonic nanoseconds); call only inside
  /// ``withLock(_:)``.
  package func wait(until deadline: Int64) {
    var until = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
    pthread_cond_timedwait(condition, mutex, &until)
  }

  /// Wakes every waiter.
  package func broadcast() {
    pthread_cond_broadcast(condition)
  }
}
