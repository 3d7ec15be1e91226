import CCSyncSystem

/// Runs one follower's looks (a storage's reloads, a mirror's syncs; see ``DocumentFollower``),
/// in order and one at a time. A reload the file watcher asks for
/// early in a turn runs right there, on the watcher thread that read the event (no thread is
/// woken between the event and the observers; ``InlineReload``); the others, and any reload
/// that follows one, run on the process's reload threads (``ReloadQueue/pool``), which every
/// storage's queue shares. An observer that blocks holds up this storage's later reloads and
/// nothing else: when it blocks on the watcher thread, a standby thread takes the watcher's
/// loop over after ``LoopHandOver/bound``; when it blocks on a pool thread, the other
/// storages' reloads go on on the pool's other thread, or on a spill thread once every pool
/// thread has been busy with one reload for ``ReloadQueue/spillAfter``. Hints that arrive
/// while a reload waits or runs are merged into one more reload after it
/// (docs/ARCHITECTURE.md, "A reload, step by step", and "Threads").
///
/// `Sendable`: the pending hint is behind a `Protected`; one job of a queue is in the pool at
/// a time.
final class ReloadQueue: Sendable {
  private struct State {
    /// The hints not yet handed to a reload, merged.
    var pending: ChangeHint?
    /// Whether a reload is queued in the pool or running.
    var draining = false
  }

  /// How long a reload may run before waiting reloads of other storages get a thread of
  /// their own: far longer than a reload takes (well under a millisecond for a small
  /// document), short enough that a blocked observer delays another file's reload by little.
  static let spillAfter: Duration = .milliseconds(10)

  /// The threads every storage's reloads share: two, and spill threads while reloads block.
  static let pool = SpillingWorkPool(name: "ccsync-reload", threadsKept: 2, spillAfter: spillAfter)

  private let state = Protected(State())
  private let pool: SpillingWorkPool

  init(pool: SpillingWorkPool = ReloadQueue.pool) {
    self.pool = pool
  }

  /// Queues a reload for `hint`, merged with any hint still waiting; `reload` runs with the
  /// merged hint on a pool thread, or at once on the calling thread when it is a file
  /// watcher's thread that gives the permission (``InlineReload``) and no reload of this
  /// storage is queued or running.
  func schedule(_ hint: ChangeHint, reload: @escaping @Sendable (ChangeHint) -> Void) {
    let startsDrain = state.withLock { state -> Bool in
      state.pending = state.pending.map { $0.merged(with: hint) } ?? hint
      guard !state.draining else { return false }
      state.draining = true
      return true
    }
    guard startsDrain else { return }
    if InlineReload.take() {
      runOne(reload)  // on the watcher thread that read the event: no thread woken
    } else {
      pool.submit { [self] in runOne(reload) }
    }
  }

  /// Runs one reload with the merged pending hint; when more hints came meanwhile, queues
  /// the next at the back of the pool's line, so that storages take turns.
  private func runOne(_ reload: @escaping @Sendable (ChangeHint) -> Void) {
    if let hint = takePending() { reload(hint) }
    let more = state.withLock { state -> Bool in
      guard state.pending != nil else {
        state.draining = false
        return false
      }
      return true
    }
    if more { pool.submit { [self] in runOne(reload) } }
  }

  /// The merged pending hint, taken.
  private func takePending() -> ChangeHint? {
    state.withLock { state in
      defer { state.pending = nil }
      return state.pending
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
      cause: other.cause, current: other.current,
      schemaMayHaveChanged: schemaMayHaveChanged || other.schemaMayHaveChanged)
  }
}
