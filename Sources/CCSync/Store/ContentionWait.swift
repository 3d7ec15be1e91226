import CCSyncSystem

/// How long a call may wait for other writers to go first: for a file's lock another process
/// holds, for an etcd lock another holder keeps, or, on a key written by compare-and-swap, for
/// its write to get through (over etcd a `.timeout` bounds the write's calls as a whole,
/// docs/SEMANTICS.md, "Deadlines and failover"). `Sendable`.
public enum ContentionWait: Sendable, Equatable {
  /// Wait as long as it takes.
  case forever
  /// Fail at once with ``StoreError/lockUnavailable(path:)`` when another writer holds the
  /// document (over etcd a write has the client's deadline, as with `.forever`).
  case nonBlocking
  /// Fail with ``StoreError/lockUnavailable(path:)`` once this much time has passed (over
  /// etcd, the write's calls are given this much time in all).
  case timeout(Duration)

  /// The deadline, or `nil` for `.forever` and for a timeout of about 292 years or more (the
  /// most nanoseconds an `Int64` holds), which is the same thing in practice: the lock is
  /// then waited for in one blocking call rather than polled.
  var deadline: ContinuousClock.Instant? {
    switch self {
    case .forever: return nil
    case .nonBlocking: return .now
    case .timeout(let duration): return duration.nanoseconds == .max ? nil : .now + duration
    }
  }
}

/// The former name of ``ContentionWait``, from when only a file's lock was waited for.
@available(*, deprecated, renamed: "ContentionWait")
public typealias LockWait = ContentionWait
