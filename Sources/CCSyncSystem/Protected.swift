import Glibc

/// A value guarded by a pthread mutex: the library's lock for shared mutable state.
///
/// Used instead of the standard `Synchronization.Mutex` for one reason: on Linux the
/// contended path of `Mutex` lives in the prebuilt, uninstrumented Synchronization library,
/// so ThreadSanitizer cannot see its ordering and reports every access it guards as a race,
/// burying real races under false ones. ThreadSanitizer understands pthread mutexes, so with
/// this lock a clean TSan run means something.
///
/// ``withLock(_:)`` is `@inlinable`, so each caller gets it specialised for its value and
/// closure: called as a generic function across modules, every lock paid for run-time
/// metadata look-ups, value witness calls and a dynamic exclusivity check, which on a
/// watcher process woken once per event (100 of them on two cores) ran from cold caches.
/// It is `public`, not `package`: the compiler serialises an `@inlinable` body for other
/// modules only for public declarations (package ones need package-wide cross-module
/// optimisation, which SwiftPM does not turn on). The value lives behind a pointer of its
/// own for the same reason: the lock, not a class property's run-time access check, is
/// what keeps its accesses exclusive.
///
/// `@unchecked Sendable`: `value` is only touched inside ``withLock(_:)``, under `mutex`.
public final class Protected<Value>: @unchecked Sendable {
  @usableFromInline let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  @usableFromInline let value = UnsafeMutablePointer<Value>.allocate(capacity: 1)

  /// Guards `value`.
  package init(_ value: Value) {
    self.value.initialize(to: value)
    pthread_mutex_init(mutex, nil)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
    value.deinitialize(count: 1)
    value.deallocate()
  }

  /// Runs `body` with the value, holding the lock; not reentrant.
  @inlinable
  public func withLock<Result, Failure: Error>(
    _ body: (inout Value) throws(Failure) -> Result
  ) throws(Failure) -> Result {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body(&value.pointee)
  }
}
