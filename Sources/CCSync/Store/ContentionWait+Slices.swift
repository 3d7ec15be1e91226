import CCSyncSystem

/// Waiting for a lock in slices, for waits that a cancelled task must be able to stop
/// (docs/SEMANTICS.md, "Async calls and cancellation").
extension ContentionWait {
  /// The longest one slice of an interruptible wait lasts: how late a cancellation may be
  /// seen by a thread waiting for a lock.
  static let cancellationSlice: Duration = .milliseconds(50)

  /// Runs `attempt` until it gets past its lock waits, giving it the end of a slice of at
  /// most ``cancellationSlice`` each time, and checking `cancellation` before each slice. An
  /// attempt that does not get its locks by the end of its slice throws
  /// ``StoreError/lockUnavailable(path:)`` (as ``StorageError/store(_:)``) and is tried again,
  /// until this wait runs out: then that error is thrown.
  /// - Throws: `CancellationError` once the flag is set; what `attempt` throws otherwise.
  func inSlices<Result>(
    checking cancellation: CancellationFlag, _ attempt: (_ sliceEnd: ContinuousClock.Instant) throws -> Result
  ) throws -> Result {
    let deadline = self.deadline
    while true {
      try cancellation.check()
      let now = ContinuousClock.now
      let sliceEnd = deadline.map { min($0, now + ContentionWait.cancellationSlice) } ?? now + ContentionWait.cancellationSlice
      do {
        return try attempt(sliceEnd)
      } catch let error as StorageError {
        guard case .store(.lockUnavailable) = error else { throw error }
        if let deadline, ContinuousClock.now >= deadline { throw error }
      }
    }
  }

  /// The wait that ends at `end` (at once, after one try, when it has passed).
  static func until(_ end: ContinuousClock.Instant) -> ContentionWait {
    .timeout(max(end - .now, .zero))
  }
}
