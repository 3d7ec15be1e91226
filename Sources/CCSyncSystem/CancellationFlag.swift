import Synchronization

/// A flag a task sets when it is cancelled and a thread doing blocking work for it checks
/// between steps (a slice of a lock wait, an attempt of a compare-and-swap), so that the work
/// stops instead of finishing for a caller who no longer wants it.
///
/// `Sendable`: the flag is an `Atomic`.
package final class CancellationFlag: Sendable {
  private let cancelled = Atomic<Bool>(false)

  package init() {}

  /// Whether ``cancel()`` has been called.
  package var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

  /// Sets the flag; it never clears.
  package func cancel() { cancelled.store(true, ordering: .releasing) }

  /// Throws `CancellationError` once the flag is set.
  package func check() throws(CancellationError) {
    if isCancelled { throw CancellationError() }
  }
}
