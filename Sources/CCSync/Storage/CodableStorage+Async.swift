import CCSyncSystem

/// The calls for Swift concurrency: the same work as ``save()``, ``load()``, ``flush()`` and
/// ``update(_:)``, done on the library's own threads (``BlockingWorkPool``, at most 4) while
/// the task awaits, so a lock wait, an `fsync` or an etcd round trip never holds a thread of
/// the cooperative pool. A storage's `async` saves and updates go to the pool one at a time
/// (``AsyncSerialGate``): the others wait as suspended tasks, so many of them take one
/// thread and the other storages' calls still find threads. A cancelled task stops waiting for the lock and throws
/// `CancellationError`; nothing is written after the cancellation is seen (docs/SEMANTICS.md,
/// "Async calls and cancellation").
///
/// They have names of their own: an `async` overload of the same name would be chosen for
/// every call in an `async` function, including calls written without `await` that mean the
/// blocking one, which would then no longer compile.
extension CodableStorage {
  /// ``save()`` without blocking the calling task's thread.
  /// - Throws: ``StorageError`` as ``save()``; `CancellationError` when the task is cancelled
  ///   before the write is planned (under the lock): nothing is written, the changes stay
  ///   pending.
  public func saveAsync() async throws {
    try await asyncWrites.withTurn {
      try await BlockingWorkPool.shared.run { cancellation in try self.save(cancellation: cancellation) }
    }
  }

  /// ``flush()`` without blocking the calling task's thread: writes pending changes, if any.
  /// - Throws: as ``saveAsync()``.
  public func flushAsync() async throws {
    guard hasPendingChanges else { return }
    try await saveAsync()
  }

  /// ``load()`` without blocking the calling task's thread. The read itself (one file read,
  /// or one etcd round trip) is not interrupted: a task cancelled during it gets its result.
  /// - Throws: as ``load()``; `CancellationError` when the task was cancelled before the read.
  public func loadAsync() async throws {
    try await BlockingWorkPool.shared.run { cancellation in
      try cancellation.check()
      try self.load()
    }
  }

  /// ``update(_:)`` without blocking the calling task's thread: the exact read-modify-write,
  /// with `body` run on a library thread under the file's lock (or before each
  /// compare-and-swap on an etcd key, so it may run more than once).
  ///
  /// A cancelled task stops waiting (for this storage's earlier writes, for the file's lock)
  /// within 50 ms and throws `CancellationError` without writing. A cancellation that comes
  /// once `body`'s result is being written is too late: the write lands and its result is
  /// returned.
  /// - Returns: what `body` returns.
  /// - Throws: as ``update(_:)``; `CancellationError` (nothing written).
  @discardableResult
  public func updateAsync<Result: Sendable>(
    _ body: @escaping @Sendable (inout Value) throws -> Result
  ) async throws -> Result {
    try await asyncWrites.withTurn {
      try await BlockingWorkPool.shared.run { cancellation in try self.update(cancellation: cancellation, body) }
    }
  }

  /// ``save()`` on a pool thread: waits in slices, looking at `cancellation` between them.
  private func save(cancellation: CancellationFlag) throws {
    let outcome: WriteOutcome
    do {
      outcome = try inSequenceInSlices(cancellation) { wait in try saveNow(wait: wait, cancellation: cancellation) }
    } catch let error as CancellationError {
      throw error
    } catch {
      let storageError = CodableStorage.storageError(error, path: path)
      report(storageError)
      throw storageError
    }
    try finish(outcome)
  }

  /// ``update(_:)`` on a pool thread: waits in slices, looking at `cancellation` between them.
  private func update<Result>(cancellation: CancellationFlag, _ body: (inout Value) throws -> Result) throws -> Result {
    let (result, outcome): (Result, WriteOutcome)
    do {
      (result, outcome) = try inSequenceInSlices(cancellation) { wait in
        try updateNow(wait: wait, cancellation: cancellation, body)
      }
    } catch let error as StorageError {
      report(error)
      throw error
    } catch let error as EncodingError {
      let storageError = StorageError.encodingFailed(path: path, message: "\(error)")
      report(storageError)
      throw storageError
    }
    try finish(outcome)
    return result
  }

  /// ``inSequence(_:)`` for a waiter that must stop when `cancellation` is set: the write
  /// sequence and then the file's lock are waited for in slices of at most 50 ms (see
  /// ``ContentionWait/inSlices(checking:_:)``), and `body` is given the wait left for the lock.
  private func inSequenceInSlices<Result>(
    _ cancellation: CancellationFlag, _ body: (ContentionWait) throws -> Result
  ) throws -> Result {
    try ContentionWait.forever.inSlices(checking: cancellation) { sliceEnd in
      // A key's write waits for no other writer: it gets the usual wait (its calls'
      // deadline), not a slice.
      let storeWait = document.wait(.forever, inSliceEndingAt: sliceEnd)
      let done = try writeSequence.withLock(before: sliceEnd) { () throws -> Result in try body(storeWait) }
      guard let done else { throw StorageError.store(.lockUnavailable(path: path)) }
      return done
    }
  }
}
