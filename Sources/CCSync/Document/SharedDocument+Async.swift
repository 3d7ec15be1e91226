import CCSyncSystem
import CCSyncJSON

/// The read-modify-write for Swift concurrency (docs/SEMANTICS.md, "Async calls and
/// cancellation").
extension SharedDocument {
  /// ``update(wait:invalidFile:missingFile:writes:_:)`` without blocking the calling task's
  /// thread: the lock wait and the write run on the library's own threads
  /// (``BlockingWorkPool``, at most 4) while the task awaits.
  ///
  /// The lock is waited for in slices of at most 50 ms; a cancelled task stops waiting at
  /// the end of the slice and throws `CancellationError` without writing. On an etcd key the
  /// cancellation is looked at before each compare-and-swap attempt; a round trip under way
  /// is not interrupted. A cancellation that comes once the result is being written is too
  /// late: the write lands and its result is returned. Calls made this way are not grouped
  /// into one write with others (group commit is for waits `.forever` on threads).
  /// - Returns: what `body` returned.
  /// - Throws: as ``update(wait:invalidFile:missingFile:writes:_:)``; `CancellationError`.
  @discardableResult
  public func updateAsync<Result: Sendable>(
    wait: ContentionWait = .forever, invalidFile: InvalidFilePolicy = .fail,
    missingFile: MissingFilePolicy = .create, writes: WritePolicy = .whenChanged,
    _ body: @escaping @Sendable (inout JSONValue) throws -> Result
  ) async throws -> Result {
    try await BlockingWorkPool.shared.run { cancellation in
      // A key's writes wait for no other writer, so there is nothing to wait for in slices:
      // its wait bounds its calls, and the cancellation is looked at before each
      // compare-and-swap attempt.
      let sliced = self.writesWaitForOtherWriters ? wait : .forever
      let tracked = try sliced.inSlices(checking: cancellation) { sliceEnd in
        try self.updateTracked(
          wait: self.wait(wait, inSliceEndingAt: sliceEnd), invalidFile: invalidFile,
          missingFile: missingFile, writes: writes, cancellation: cancellation
        ) { document, _ in try body(&document) }
      }
      if let notDurable = tracked.notDurable { throw notDurable }
      return tracked.result
    }
  }
}
