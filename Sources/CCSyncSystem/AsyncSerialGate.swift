/// Lets `async` callers through one at a time, in order, with no thread held while they wait
/// their turn: a waiting task is a suspended continuation. A task cancelled while it waits
/// leaves the line and throws `CancellationError`.
///
/// A storage's `async` writes pass one at a time, so that 64 of them waiting for one locked
/// file take one of the ``BlockingWorkPool``'s threads, not all of them, and the writes of
/// other files go on.
///
/// `Sendable`: the state is a `Protected`.
package final class AsyncSerialGate: Sendable {
  private struct State {
    var isBusy = false
    var waiters: [(id: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
    var nextID: UInt64 = 0
  }

  private let state = Protected(State())

  package init() {}

  /// Runs `body` once every caller before this one has finished.
  /// - Throws: `CancellationError` when the task is cancelled before its turn (`body` does
  ///   not run); what `body` throws.
  package func withTurn<Result: Sendable>(_ body: () async throws -> Result) async throws -> Result {
    try await enter()
    defer { leave() }
    return try await body()
  }

  private func enter() async throws {
    let id = state.withLock { state in
      state.nextID += 1
      return state.nextID
    }
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        // A cancellation before this point has set the task's flag before its handler found
        // nothing to remove: looked at under the lock, it is seen here or by the handler.
        let answer = state.withLock { state -> Result<Void, CancellationError>? in
          if Task.isCancelled { return .failure(CancellationError()) }
          if !state.isBusy {
            state.isBusy = true
            return .success(())
          }
          state.waiters.append((id, continuation))
          return nil
        }
        if let answer { continuation.resume(with: answer) }
      }
    } onCancel: {
      let waiter = state.withLock { state in
        state.waiters.firstIndex { $0.id == id }.map { state.waiters.remove(at: $0) }
      }
      waiter?.continuation.resume(throwing: CancellationError())
    }
  }

  private func leave() {
    let next = state.withLock { state -> (id: UInt64, continuation: CheckedContinuation<Void, any Error>)? in
      guard !state.waiters.isEmpty else {
        state.isBusy = false
        return nil
      }
      return state.waiters.removeFirst()
    }
    next?.continuation.resume()
  }
}
