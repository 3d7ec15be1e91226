/// A fixed number of threads shared by many serial lanes of work (every storage's reloads, or
/// every storage's automatic saves), plus a spill thread each time every thread has been
/// running its current job for longer than a bound while other jobs wait.
///
/// A job that blocks (an observer that waits for something, a save waiting for another
/// process's lock) therefore holds up its own lane alone: once it has run longer than
/// ``spillAfter`` and no other thread is free, the waiting jobs get a thread of their own.
/// Without a blocked job, the process has ``threadsKept`` threads for all its lanes however
/// many there are and however much work they get at once (docs/ARCHITECTURE.md, "Threads").
/// Spill threads end as soon as they find nothing to do; the kept ones, and the watchdog
/// that decides on spills (started while jobs wait and every thread is busy), live on.
///
/// Jobs start in the order they were submitted. A lane (``SerialLane``) submits at most one
/// job at a time, so lanes take turns.
///
/// `@unchecked Sendable`: every variable is guarded by `condition`.
package final class SpillingWorkPool: @unchecked Sendable {
  /// The threads that stay once started.
  package let threadsKept: Int
  /// How long every thread must have run its current job before waiting jobs get a spill
  /// thread.
  package let spillAfter: Duration
  private let name: String
  private let condition = ConditionLock()
  /// Jobs not yet taken, from `readyStart` on (taken ones are cleared in batches).
  private var ready: [(@Sendable () -> Void)?] = []
  private var readyStart = 0
  private var threadCount = 0
  private var idleCount = 0
  /// When the job each running thread is on started, by thread number.
  private var runningSince: [Int: ContinuousClock.Instant] = [:]
  private var nextThreadNumber = 0
  private var watchdogRunning = false
  private var spillCount = 0

  /// Creates a pool whose threads are named `name` (15 bytes at most are shown in
  /// `/proc/PID/task/TID/comm`).
  package init(name: String, threadsKept: Int, spillAfter: Duration) {
    self.name = name
    self.threadsKept = max(1, threadsKept)
    self.spillAfter = spillAfter
  }

  /// How many spill threads have been started so far (tests check that a blocked job got one).
  package var spillsStarted: Int { condition.withLock { spillCount } }

  /// The threads the pool has now, kept and spill, busy or idle (the watchdog not counted).
  package var currentThreads: Int { condition.withLock { threadCount } }

  /// Runs `job` on one of the pool's threads, after the jobs submitted before it have started.
  /// When no thread can be created and the pool has none, `job` runs on the caller's thread.
  package func submit(_ job: @escaping @Sendable () -> Void) {
    enum Start { case nothing, keptThread(Int), watchdog }
    let start = condition.withLock { () -> Start in
      ready.append(job)
      if idleCount > 0 {
        condition.broadcast()
        return .nothing
      }
      if threadCount < threadsKept {
        threadCount += 1
        nextThreadNumber += 1
        runningSince[nextThreadNumber] = .now  // starting: counts as busy with a fresh job
        return .keptThread(nextThreadNumber)
      }
      return startsWatchdog() ? .watchdog : .nothing
    }
    switch start {
    case .nothing: return
    case .keptThread(let number): startThread(number, kept: true)
    case .watchdog: startWatchdog()
    }
  }

  /// Whether jobs wait with every thread busy and no watchdog looking: then one must start
  /// (and is now counted as running). Under the lock.
  private func startsWatchdog() -> Bool {
    guard readyStart < ready.count, idleCount == 0, !watchdogRunning else { return false }
    watchdogRunning = true
    return true
  }

  /// The next job, or `nil` when none waits. Under the lock.
  private func takeJob() -> (@Sendable () -> Void)? {
    guard readyStart < ready.count else { return nil }
    let job = ready[readyStart]
    ready[readyStart] = nil
    readyStart += 1
    if readyStart == ready.count {
      ready.removeAll(keepingCapacity: true)
      readyStart = 0
    } else if readyStart >= 1024 && readyStart * 2 >= ready.count {
      ready.removeFirst(readyStart)
      readyStart = 0
    }
    return job
  }

  private func startThread(_ number: Int, kept: Bool) {
    do {
      try BackgroundThread(name: name) { [self] in serve(number, kept: kept) }.detach()
    } catch {
      // No thread: the jobs wait for one that exists; with none at all, the caller runs them.
      let orphans = condition.withLock { () -> [@Sendable () -> Void] in
        threadCount -= 1
        runningSince[number] = nil
        guard threadCount == 0 else { return [] }
        var jobs: [@Sendable () -> Void] = []
        while let job = takeJob() { jobs.append(job) }
        return jobs
      }
      for job in orphans { job() }
    }
  }

  /// A pool thread: runs jobs in order; a kept thread then waits for more, a spill thread ends.
  private func serve(_ number: Int, kept: Bool) {
    while true {
      let (job, startWatchdog) = condition.withLock { () -> ((@Sendable () -> Void)?, Bool) in
        runningSince[number] = nil
        while true {
          if let job = takeJob() {
            runningSince[number] = .now
            return (job, startsWatchdog())
          }
          if !kept {
            threadCount -= 1
            return (nil, false)
          }
          idleCount += 1
          condition.wait()
          idleCount -= 1
        }
      }
      if startWatchdog { self.startWatchdog() }
      guard let job else { return }
      job()
    }
  }

  private func startWatchdog() {
    do {
      try BackgroundThread(name: "ccsync-watchdog", stackSize: 64 * 1024) { [self] in watch() }.detach()
    } catch {
      condition.withLock { watchdogRunning = false }  // the next submission tries again
    }
  }

  /// The watchdog: while jobs wait, starts a spill thread whenever every thread has run its
  /// current job for ``spillAfter``; ends when no job waits or a thread is idle.
  private func watch() {
    while true {
      let spill = condition.withLock { () -> Int? in
        while true {
          guard readyStart < ready.count, idleCount == 0 else {
            watchdogRunning = false
            return nil
          }
          let now = ContinuousClock.now
          // The last thread to have started its job is the last to count as stuck.
          let latestStart = runningSince.values.max() ?? now
          if runningSince.count == threadCount && now - latestStart >= spillAfter {
            threadCount += 1
            spillCount += 1
            nextThreadNumber += 1
            runningSince[nextThreadNumber] = now
            return nextThreadNumber
          }
          condition.wait(until: latestStart + spillAfter)
        }
      }
      guard let spill else { return }
      startThread(spill, kept: false)
    }
  }
}
