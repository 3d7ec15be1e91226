import Glibc

/// A value guarded by a pthread mutex: the library's lock for shared mutable state.
///
/// Used instead of the standard `Synchronization.Mutex` for one reason: on Linux the
/// contended path of `Mutex` lives in the prebuilt, uninstrumented Synchronization library,
/// so ThreadSanitizer cannot see its ordering and reports every access it guards as a race,
/// burying real races under false ones. ThreadSanitizer understands pthread mutexes, so with
/// this lock a clean TSan run means something.
///
/// `@unchecked Sendable`: `value` is only touched inside ``withLock(_:)``, under `mutex`.
package final class Protected<Value>: @unchecked Sendable {
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private var value: Value

  /// Guards `value`.
  package init(_ value: Value) {
    self.value = value
    pthread_mutex_init(mutex, nil)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  /// Runs `body` with the value, holding the lock; not reentrant.
  package func withLock<Result, Failure: Error>(
    _ body: (inout Value) throws(Failure) -> Result
  ) throws(Failure) -> Result {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body(&value)
  }
}
