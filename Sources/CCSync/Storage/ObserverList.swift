
/// The observers of one storage, called in registration order, each change once, in the
/// order the changes happened.
///
/// Changes are queued; whichever thread finds nobody delivering drains the queue. A handler
/// that changes the value again (re-entrancy) only queues that change, so nothing deadlocks
/// and the order holds. `Sendable`: all state is behind a `Protected`.
final class ObserverList<Value: Sendable>: Sendable {
  typealias Handler = @Sendable (StorageChange<Value>) -> Void

  private struct State {
    var handlers: [(id: UInt64, handler: Handler)] = []
    var nextID: UInt64 = 0
    var queue: [StorageChange<Value>] = []
    var delivering = false
  }

  private let state = Protected(State())

  /// Adds `handler`; the returned observation removes it when cancelled or released.
  func add(_ handler: @escaping Handler) -> StorageObservation {
    let id = state.withLock { state in
      state.nextID += 1
      state.handlers.append((state.nextID, handler))
      return state.nextID
    }
    return StorageObservation { [weak self] in
      self?.state.withLock { state in state.handlers.removeAll { $0.id == id } }
    }
  }

  /// Queues `change` for every observer and delivers the queue unless another thread is.
  func notify(_ change: StorageChange<Value>) {
    if enqueue(change) { deliver() }
  }

  /// Queues `change` for every observer without calling anyone, so a caller can queue while
  /// holding the lock that ordered the change. Returns whether the caller must ``deliver()``
  /// (after releasing that lock): `false` when there is no observer or another thread is
  /// delivering and will take this change too.
  func enqueue(_ change: StorageChange<Value>) -> Bool {
    state.withLock { state in
      guard !state.handlers.isEmpty else { return false }
      state.queue.append(change)
      if state.delivering { return false }
      state.delivering = true
      return true
    }
  }

  /// Calls the handlers with every queued change, in order, until the queue is empty. Only
  /// the thread that ``enqueue(_:)`` told to deliver calls this.
  func deliver() {
    while let (next, handlers) = nextDelivery() {
      for entry in handlers { entry.handler(next) }
    }
  }

  private func nextDelivery() -> (StorageChange<Value>, [(id: UInt64, handler: Handler)])? {
    state.withLock { state in
      guard !state.queue.isEmpty else {
        state.delivering = false
        return nil
      }
      return (state.queue.removeFirst(), state.handlers)
    }
  }
}
