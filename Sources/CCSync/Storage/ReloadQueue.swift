import CCSyncSystem
import Dispatch

/// Runs one storage's reloads, in order, off the store's watcher thread: the watcher only
/// hands over its hint, and the reading, decoding and observer calls happen here, so an
/// observer that blocks holds up this storage's later reloads and nothing else (every other
/// file in the process keeps being watched and reloaded). Hints that arrive while a reload
/// runs are merged into one more reload after it (docs/ARCHITECTURE.md, "A reload, step by
/// step").
///
/// `Sendable`: the pending hint is behind a `Protected`; the queue is serial.
final class ReloadQueue: Sendable {
  private struct State {
    /// The hints not yet handed to a reload, merged.
    var pending: ChangeHint?
    /// Whether a reload is scheduled or running.
    var draining = false
  }

  private let state = Protected(State())
  private let queue: DispatchQueue

  init(label: String) {
    queue = DispatchQueue(label: label)
  }

  /// Queues a reload for `hint`, merged with any hint still waiting; `reload` runs on the
  /// queue with the merged hint.
  func schedule(_ hint: ChangeHint, reload: @escaping @Sendable (ChangeHint) -> Void) {
    let startsDrain = state.withLock { state -> Bool in
      state.pending = state.pending.map { $0.merged(with: hint) } ?? hint
      guard !state.draining else { return false }
      state.draining = true
      return true
    }
    guard startsDrain else { return }
    queue.async { [self] in
      while let next = takePending() { reload(next) }
    }
  }

  /// The merged pending hint, or `nil` (and the drain ends) when there is none.
  private func takePending() -> ChangeHint? {
    state.withLock { state in
      guard let hint = state.pending else {
        state.draining = false
        return nil
      }
      state.pending = nil
      return hint
    }
  }
}

extension ChangeHint {
  /// One hint that asks for everything either asked for, with the newer one's news of the
  /// current version. It stays the requested re-check
  /// (which reports an invalid document) only when the other hint is a re-check too or a
  /// periodic check: an event that may have changed the bytes starts a new grace period.
  func merged(with other: ChangeHint) -> ChangeHint {
    let isRequestedRecheck =
      switch (self.isRequestedRecheck, other.isRequestedRecheck) {
      case (true, true): true
      case (true, false): !other.contentMayDiffer
      case (false, true): !contentMayDiffer
      case (false, false): false
      }
    // The newer hint's news of the current version, if any: an older one is stale.
    return ChangeHint(
      contentMayDiffer: contentMayDiffer || other.contentMayDiffer,
      isRequestedRecheck: isRequestedRecheck,
      description: other.description, current: other.current,
      schemaMayHaveChanged: schemaMayHaveChanged || other.schemaMayHaveChanged)
  }
}
