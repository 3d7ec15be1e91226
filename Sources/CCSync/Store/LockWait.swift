import CCSyncSystem

/// How long to wait for a lock another owner holds. `Sendable`.
public enum LockWait: Sendable, Equatable {
  /// Wait as long as it takes.
  case forever
  /// Fail at once with ``StoreError/lockUnavailable(path:)``.
  case nonBlocking
  /// Fail with ``StoreError/lockUnavailable(path:)`` once this much time has passed.
  case timeout(Duration)

  /// The monotonic deadline in nanoseconds, or `nil` for `.forever` and for a timeout too
  /// long to express (hundreds of years), which is the same thing in practice.
  var deadline: Int64? {
    switch self {
    case .forever: return nil
    case .nonBlocking: return FileSystem.monotonicNanoseconds()
    case .timeout(let duration):
      let (seconds, attoseconds) = duration.components
      let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
      guard !overflow else { return seconds < 0 ? FileSystem.monotonicNanoseconds() : nil }
      let (sum, sumOverflow) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
      let (deadline, deadlineOverflow) = FileSystem.monotonicNanoseconds().addingReportingOverflow(sum)
      guard !sumOverflow, !deadlineOverflow else { return sum < 0 ? FileSystem.monotonicNanoseconds() : nil }
      return deadline
    }
  }
}
