import CCSyncSystem

/// How long to wait for a lock another owner holds. `Sendable`.
public enum LockWait: Sendable, Equatable {
  /// Wait as long as it takes.
  case forever
  /// Fail at once with ``StoreError/lockUnavailable(path:)``.
  case nonBlocking
  /// Fail with ``StoreError/lockUnavailable(path:)`` once this much time has passed.
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
