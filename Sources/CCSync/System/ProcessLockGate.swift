import Glibc

/// A readers-writer gate inside this process, one per lock file.
///
/// `flock(2)` treats two `open()` calls as two owners, so two threads of one process that lock
/// the same file through two descriptors would block each other forever if one of them held
/// the lock while waiting for the other. Every ``FileLock`` therefore passes this gate first:
/// shared holders share it, an exclusive holder has it alone.
///
/// `@unchecked Sendable`: all state is guarded by `mutex`, waits use `condition`.
final class ProcessLockGate: @unchecked Sendable {
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
  private var sharedHolders = 0
  private var exclusiveHeld = false
  private var exclusiveWaiters = 0
  /// Users of this gate (holders and waiters); the table drops the gate when it reaches zero.
  fileprivate var references = 0

  init() {
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

  /// Enters the gate; returns `false` if `deadline` (monotonic nanoseconds, `nil` for none)
  /// passed first. Writers are preferred so a stream of readers cannot starve them.
  func enter(exclusive: Bool, deadline: Int64?) -> Bool {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    if exclusive { exclusiveWaiters += 1 }
    defer { if exclusive { exclusiveWaiters -= 1 } }
    while exclusive ? (exclusiveHeld || sharedHolders > 0) : (exclusiveHeld || exclusiveWaiters > 0) {
      if let deadline {
        if FileSystem.monotonicNanoseconds() >= deadline { return false }
        var until = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        pthread_cond_timedwait(condition, mutex, &until)
      } else {
        pthread_cond_wait(condition, mutex)
      }
    }
    if exclusive { exclusiveHeld = true } else { sharedHolders += 1 }
    return true
  }

  /// Leaves the gate entered with the same `exclusive`.
  func leave(exclusive: Bool) {
    pthread_mutex_lock(mutex)
    if exclusive { exclusiveHeld = false } else { sharedHolders -= 1 }
    pthread_cond_broadcast(condition)
    pthread_mutex_unlock(mutex)
  }
}

/// The gates of this process, keyed by the lock file's device and inode.
///
/// `@unchecked Sendable`: `gates` is guarded by `mutex`.
final class ProcessLockTable: @unchecked Sendable {
  static let shared = ProcessLockTable()

  struct Key: Hashable {
    var device: UInt64
    var inode: UInt64
  }

  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private var gates: [Key: ProcessLockGate] = [:]

  private init() {
    pthread_mutex_init(mutex, nil)
  }

  /// The gate for `key`, counted as used until ``release(_:)``.
  func retain(_ key: Key) -> ProcessLockGate {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    let gate = gates[key] ?? ProcessLockGate()
    gates[key] = gate
    gate.references += 1
    return gate
  }

  func release(_ key: Key) {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    guard let gate = gates[key] else { return }
    gate.references -= 1
    if gate.references == 0 { gates[key] = nil }
  }

  /// How many lockers (holders and waiters) use the gate for `key`; 0 when it has none.
  /// For tests: it must match the locks actually held.
  func userCount(of key: Key) -> Int {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return gates[key]?.references ?? 0
  }
}
