import Glibc

/// A small pool of the library's own threads for blocking work asked for from Swift
/// concurrency (a lock wait, `fsync`, an etcd round trip), so that an `async` call never holds
/// one of the cooperative pool's few threads while it waits.
///
/// At most ``maximumThreads`` threads run at once; work beyond that waits in a queue, in
/// order, and holds no thread. A thread is started when work arrives that no idle thread is
/// free to take, and ends after ``idleLifetime`` without work. A task cancelled while its work is queued is
/// answered at once with `CancellationError` and its work never runs; work already running is
/// told through its ``CancellationFlag`` and stops at its next check.
///
/// `@unchecked Sendable`: `queue`, `threadCount` and `idleCount` are guarded by `condition`.
package final class BlockingWorkPool: @unchecked Sendable {
  /// The pool the library's `async` calls use: at most 4 threads.
  package static let shared = BlockingWorkPool(name: "ccsync.blocking", maximumThreads: 4)

  /// The most threads running work at once.
  package let maximumThreads: Int
  /// How long an idle thread waits for work before it ends.
  package let idleLifetime: Duration
  private let name: String
  private let condition = ConditionLock()
  private var queue: [Job] = []
  private var threadCount = 0
  private var idleCount = 0
  private var busyPeak = 0

  /// Creates a pool whose threads are named `name` (15 bytes at most are shown).
  package init(name: String, maximumThreads: Int, idleLifetime: Duration = .seconds(5)) {
    self.name = name
    self.maximumThreads = max(1, maximumThreads)
    self.idleLifetime = idleLifetime
  }

  /// The most threads this pool has had running work at the same time (tests check the bound).
  package var peakBusyThreads: Int { condition.withLock { busyPeak } }

  /// The threads the pool has now, busy or idle.
  package var currentThreads: Int { condition.withLock { threadCount } }

  /// Runs `body` on one of the pool's threads and returns what it returns, without blocking
  /// the calling task's thread. When the task is cancelled before `body` starts, `body` never
  /// runs and this throws `CancellationError`; once it has started, the flag `body` is given
  /// is set and `body` decides when to stop (its result or error is what this returns).
  /// - Throws: what `body` throws; `CancellationError`; the `SystemError` of a thread that
  ///   could not be created when the pool has none.
  package func run<Output: Sendable>(
    _ body: @escaping @Sendable (CancellationFlag) throws -> Output
  ) async throws -> Output {
    let flag = CancellationFlag()
    let job = Job(flag: flag)
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Output, any Error>) in
        job.work = { flag in
          guard !flag.isCancelled else { return continuation.resume(throwing: CancellationError()) }
          continuation.resume(with: Result { try body(flag) })
        }
        job.fail = { error in continuation.resume(throwing: error) }
        submit(job)
      }
    } onCancel: {
      flag.cancel()
      if let removed = remove(job) { removed.fail?(CancellationError()) }
    }
  }

  /// Queues `job` and makes sure a thread will take it.
  private func submit(_ job: Job) {
    let startsThread = condition.withLock { () -> Bool in
      queue.append(job)
      condition.broadcast()
      // Each idle thread takes one job: more jobs than idle threads need another thread.
      guard queue.count > idleCount && threadCount < maximumThreads else { return false }
      threadCount += 1
      return true
    }
    guard startsThread else { return }
    do {
      try BackgroundThread(name: name) { [self] in serve() }.detach()
    } catch {
      // No thread: the queued work waits for one that exists, or fails when there is none.
      let orphans = condition.withLock { () -> [Job] in
        threadCount -= 1
        guard threadCount == 0 else { return [] }
        defer { queue = [] }
        return queue
      }
      for orphan in orphans { orphan.fail?(error) }
    }
  }

  /// Takes `job` out of the queue if no thread has taken it yet.
  private func remove(_ job: Job) -> Job? {
    condition.withLock {
      guard let index = queue.firstIndex(where: { $0 === job }) else { return nil }
      return queue.remove(at: index)
    }
  }

  /// A pool thread: runs queued work in order until it has been idle for ``idleLifetime``.
  private func serve() {
    while true {
      let job = condition.withLock { () -> Job? in
        idleCount += 1
        defer { idleCount -= 1 }
        let deadline = ContinuousClock.now + idleLifetime
        while queue.isEmpty {
          if ContinuousClock.now >= deadline {
            threadCount -= 1
            return nil
          }
          condition.wait(until: deadline)
        }
        let running = threadCount - (idleCount - 1)
        busyPeak = max(busyPeak, running)
        return queue.removeFirst()
      }
      guard let job else { return }
      job.work?(job.flag)
      job.work = nil
      job.fail = nil
    }
  }

  /// One call's work and how to answer it.
  ///
  /// `@unchecked Sendable`: `work` and `fail` are set before the job is queued, and called by
  /// the one party (a pool thread, or the canceller) that took the job out of the queue under
  /// the pool's lock, so the continuation is resumed exactly once.
  private final class Job: @unchecked Sendable {
    let flag: CancellationFlag
    var work: (@Sendable (CancellationFlag) -> Void)?
    var fail: (@Sendable (any Error) -> Void)?
    init(flag: CancellationFlag) { self.flag = flag }
  }
}
