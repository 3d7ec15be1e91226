/// How long to wait for a lock another owner holds. `Sendable`.
public enum LockWait: Sendable, Equatable {
  /// Wait as long as it takes.
  case forever
  /// Fail at once with ``StorageError/lockUnavailable(path:)``.
  case nonBlocking
  /// Fail with ``StorageError/lockUnavailable(path:)`` once this much time has passed.
  case timeout(Duration)

  /// The monotonic deadline in nanoseconds, or `nil` for `.forever`.
  var deadline: Int64? {
    switch self {
    case .forever: return nil
    case .nonBlocking: return FileSystem.monotonicNanoseconds()
    case .timeout(let duration):
      let (seconds, attoseconds) = duration.components
      return FileSystem.monotonicNanoseconds() + seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
  }
}
