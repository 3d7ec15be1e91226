import Glibc

/// A readers-writer gate inside this process, one per lock file.
///
/// `flock(2)` treats two `open()` calls as two owners, so two threads of one process that lock
/// the same file through two descriptors would block each other forever if one of them held
/// the lock while waiting for the other. Every ``FileLock`` therefore passes this gate first:
/// shared holders share it, an exclusive holder has it alone.
///
/// A thread that already holds the gate shared may take it shared again at once, even while a
/// writer waits: the writer waits for the outer hold anyway, so making the nested one wait
/// for the writer would deadlock (or, with a deadline, refuse it). A thread that holds the
/// gate exclusively, or shared and asks for it exclusively, with no deadline, would wait for
/// itself for ever: it is refused at once (``Entry/heldByThisThread``). With a deadline it
/// waits it out, as for any holder.
///
/// `@unchecked Sendable`: all state is guarded by `condition`'s mutex.
package final class ProcessLockGate: @unchecked Sendable {
  private let condition = ConditionLock()
  private var sharedHolders = 0
  /// How many shared holds each thread has (`pthread_self()`), for nested shared holds.
  private var sharedHoldsByThread: [UInt: Int] = [:]
  private var exclusiveHeld = false
  /// The thread holding the gate exclusively, while one does.
  private var exclusiveOwner: UInt?
  private var exclusiveWaiters = 0
  /// Users of this gate (holders and waiters); the table drops the gate when it reaches zero.
  fileprivate var references = 0

  /// How a call to ``enter(exclusive:deadline:)`` ended.
  package enum Entry {
    case entered
    /// The deadline passed first.
    case timedOut
    /// This thread holds the gate in a way that the request, with no deadline, would wait
    /// for for ever.
    case heldByThisThread
  }

  /// Enters the gate, or says why not: `deadline` (`nil` for none)
  /// passed first, or this thread's own hold would keep it waiting for ever. Writers are
  /// preferred so a stream of readers cannot starve them.
  /// - Parameter owner: who holds the gate once entered: the calling thread (the default), or
  ///   a token of ``ThreadIdentity/newHolder()`` for a hold that may be released on another
  ///   thread (a lock an `async` task took on a pool thread).
  package func enter(exclusive: Bool, deadline: ContinuousClock.Instant?, owner: UInt = ThreadIdentity.current) -> Entry {
    let thread = owner
    return condition.withLock {
      if deadline == nil, exclusiveOwner == thread || (exclusive && sharedHoldsByThread[thread] != nil) {
        return .heldByThisThread
      }
      if !exclusive, sharedHoldsByThread[thread] != nil {
        sharedHolders += 1
        sharedHoldsByThread[thread, default: 0] += 1
        return .entered
      }
      if exclusive { exclusiveWaiters += 1 }
      defer { if exclusive { exclusiveWaiters -= 1 } }
      while exclusive ? (exclusiveHeld || sharedHolders > 0) : (exclusiveHeld || exclusiveWaiters > 0) {
        if let deadline {
          if ContinuousClock.now >= deadline {
            // Shared waiters held back only by this waiting writer may go in now.
            if exclusive { condition.broadcast() }
            return .timedOut
          }
          condition.wait(until: deadline)
        } else {
          condition.wait()
        }
      }
      if exclusive {
        exclusiveHeld = true
        exclusiveOwner = thread
      } else {
        sharedHolders += 1
        sharedHoldsByThread[thread, default: 0] += 1
      }
      return .entered
    }
  }

  /// How many threads wait to enter exclusively (for tests).
  var waitingWriters: Int { condition.withLock { exclusiveWaiters } }

  /// Leaves the gate entered with the same `exclusive` and `owner`.
  package func leave(exclusive: Bool, owner: UInt = ThreadIdentity.current) {
    let thread = owner
    condition.withLock {
      if exclusive {
        exclusiveHeld = false
        exclusiveOwner = nil
      } else {
        sharedHolders -= 1
        let remaining = (sharedHoldsByThread[thread] ?? 1) - 1
        sharedHoldsByThread[thread] = remaining > 0 ? remaining : nil
      }
      condition.broadcast()
    }
  }
}

/// The gates of this process, keyed by the lock file's device and inode.
///
/// `@unchecked Sendable`: `gates` is guarded by `lock`.
package final class ProcessLockTable: @unchecked Sendable {
  package static let shared = ProcessLockTable()

  package struct Key: Hashable {
    package var device: UInt64
    package var inode: UInt64

    package init(device: UInt64, inode: UInt64) {
      self.device = device
      self.inode = inode
    }
  }

  private let lock = ConditionLock()
  private var gates: [Key: ProcessLockGate] = [:]

  private init() {}

  /// The gate for `key`, counted as used until ``release(_:)``.
  package func retain(_ key: Key) -> ProcessLockGate {
    lock.withLock {
      let gate = gates[key] ?? ProcessLockGate()
      gates[key] = gate
      gate.references += 1
      return gate
    }
  }

  package func release(_ key: Key) {
    lock.withLock {
      guard let gate = gates[key] else { return }
      gate.references -= 1
      if gate.references == 0 { gates[key] = nil }
    }
  }

  /// How many lockers (holders and waiters) use the gate for `key`; 0 when it has none.
  /// For tests: it must match the locks actually held.
  package func userCount(of key: Key) -> Int {
    lock.withLock { gates[key]?.references ?? 0 }
  }
}
