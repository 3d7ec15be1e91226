import CCSyncSystem

/// A file document's lock, held: `flock(2)` on `NAME.lock` beside the resolved file, the
/// lock every writer of the file (this library, `ccsync set`, `ccsync lock`) takes, so
/// holding it exclusively keeps every writer out, and holding it shared keeps writers out
/// while letting other readers in (docs/SEMANTICS.md, "Locks").
///
/// Take it with ``SharedFile/lock(exclusive:wait:)`` or, from Swift concurrency,
/// ``SharedFile/lockAsync(exclusive:wait:)``; give it back with ``release()`` (also done
/// when the value is deinitialised). It may be released on any thread. It is not inherited by
/// child processes (the lock file is close-on-exec), and a process that ends releases it.
///
/// Not reentrant: taking the lock again while holding it waits for the hold to end. A
/// blocking take with no wait bound on the thread that holds it is refused with `EDEADLK`
/// instead of hanging; a lock taken by an `async` call belongs to no thread, so a second
/// take of it in the same task waits for its release (give such a take a wait bound).
///
/// `Sendable`: the held lock is behind a `Protected`.
public final class FileDocumentLock: Sendable {
  /// The lock file: `NAME.lock` beside the resolved data file.
  public let lockPath: String
  /// The data file the lock guards, as resolved when it was taken.
  public let resolvedPath: String
  /// Whether it is the exclusive lock (writers') rather than the shared one (readers').
  public let isExclusive: Bool
  private let held: Protected<FileLock?>

  init(_ lock: FileLock, resolvedPath: String) {
    lockPath = lock.lockPath
    self.resolvedPath = resolvedPath
    isExclusive = lock.exclusive
    held = Protected(lock)
  }

  deinit { release() }

  /// Whether the lock is still held (not released yet).
  public var isHeld: Bool { held.withLock { $0 != nil } }

  /// Releases the lock: closing the lock file releases the `flock`, and the next waiter
  /// (in this process or another) gets it. Idempotent; any thread.
  public func release() {
    let lock = held.withLock { lock -> FileLock? in
      defer { lock = nil }
      return lock
    }
    lock?.release()
  }
}

extension SharedFile {
  /// Takes this file's lock and returns it held, blocking the calling thread while another
  /// holder has it: the exclusive lock (the default; what every writer takes) or the shared
  /// one (readers that must see one consistent version). The lock file is created if
  /// missing; the data file need not exist.
  /// - Parameters:
  ///   - exclusive: the exclusive lock (`true`) or the shared one.
  ///   - wait: how long to wait for another holder: for ever (the default), not at all, or
  ///     up to a time.
  /// - Returns: the lock, held until ``FileDocumentLock/release()``.
  /// - Throws: ``StoreError/lockUnavailable(path:)`` naming the lock file when `wait` runs
  ///   out; ``StoreError/missingDirectory(path:)``; ``StoreError/notRegularFile(path:kind:)``
  ///   when something other than a regular file sits at the lock's name; symlink errors as
  ///   ``resolvedPath()``; ``StoreError/system(_:)`` with `EDEADLK` when this thread holds the
  ///   lock already and `wait` is `.forever`.
  public func lock(exclusive: Bool = true, wait: ContentionWait = .forever) throws(StoreError) -> FileDocumentLock {
    let target = try resolvedPath()
    return FileDocumentLock(try FileLock(resolvedPath: target, exclusive: exclusive, wait: wait), resolvedPath: target)
  }

  /// ``lock(exclusive:wait:)`` without blocking the calling task's thread: the wait happens
  /// on the library's own threads (at most 4, shared by every `async` call), in slices of at
  /// most 50 ms, each a separate piece of work, so that waiters never keep the holder's own
  /// `async` calls from a thread. A task cancelled while it waits stops waiting within a
  /// slice and throws `CancellationError`, and then does not hold the lock: a lock taken as
  /// the cancellation came is released before the error is thrown.
  /// - Returns: the lock, held until ``FileDocumentLock/release()``; it belongs to no thread.
  /// - Throws: as ``lock(exclusive:wait:)`` (never `EDEADLK`); `CancellationError`.
  public func lockAsync(exclusive: Bool = true, wait: ContentionWait = .forever) async throws -> FileDocumentLock {
    let owner = ThreadIdentity.newHolder()
    let deadline = wait.deadline
    while true {
      try Task.checkCancellation()
      let taken = try await BlockingWorkPool.shared.run { cancellation throws -> FileDocumentLock? in
        try cancellation.check()
        let target = try self.resolvedPath()
        let now = ContinuousClock.now
        let sliceEnd = min(deadline ?? now + ContentionWait.cancellationSlice, now + ContentionWait.cancellationSlice)
        let waitIsOver = { deadline.map { ContinuousClock.now >= $0 } ?? false }
        guard let taken = try FileLock.slice(resolvedPath: target, exclusive: exclusive, sliceEnd: sliceEnd, owner: owner, waitIsOver: waitIsOver)
        else { return nil }
        let lock = FileDocumentLock(taken, resolvedPath: target)
        if cancellation.isCancelled {
          lock.release()
          throw CancellationError()
        }
        return lock
      }
      guard let taken else { continue }
      // Cancelled while the answer came back: the caller asked not to hold it.
      if Task.isCancelled {
        taken.release()
        throw CancellationError()
      }
      return taken
    }
  }
}

extension FileLock {
  /// One slice of an `async` wait: the lock, or `nil` when the slice ended without it and
  /// the whole wait is not over.
  /// - Throws: as ``init(resolvedPath:exclusive:wait:owner:)``; ``StoreError/lockUnavailable(path:)``
  ///   once `waitIsOver`.
  static func slice(
    resolvedPath: String, exclusive: Bool, sliceEnd: ContinuousClock.Instant, owner: UInt, waitIsOver: () -> Bool
  ) throws -> FileLock? {
    do {
      return try FileLock(resolvedPath: resolvedPath, exclusive: exclusive, wait: .until(sliceEnd), owner: owner)
    } catch {
      if case .lockUnavailable = error, !waitIsOver() { return nil }
      throw error
    }
  }
}
