import Glibc

/// A pthread mutex that the thread holding it may take again (`PTHREAD_MUTEX_RECURSIVE`): for
/// a sequence of operations that code it calls out to (an observer, a handler) may start
/// again on the same thread. A pthread mutex, like ``Protected``'s, so that ThreadSanitizer
/// sees the ordering it gives.
///
/// `@unchecked Sendable`: the mutex is the synchronisation.
package final class RecursiveLock: @unchecked Sendable {
  fileprivate let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

  package init() {
    var attributes = pthread_mutexattr_t()
    pthread_mutexattr_init(&attributes)
    pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_RECURSIVE))
    pthread_mutex_init(mutex, &attributes)
    pthread_mutexattr_destroy(&attributes)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  /// Runs `body` holding the lock.
  package func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body()
  }
}

extension RecursiveLock {
  /// Runs `body` holding the lock if it can be taken before `deadline`; returns `nil` (and
  /// runs nothing) otherwise. The lock is polled (`pthread_mutex_trylock`, a millisecond
  /// apart), for waits that must stop now and then to look at a cancellation flag.
  package func withLock<Result, Failure: Error>(
    before deadline: ContinuousClock.Instant, _ body: () throws(Failure) -> Result
  ) throws(Failure) -> Result? {
    while pthread_mutex_trylock(mutex) != 0 {
      if ContinuousClock.now >= deadline { return nil }
      ContinuousClock.sleepThread(for: .milliseconds(1))
    }
    defer { pthread_mutex_unlock(mutex) }
    return try body()
  }
}
