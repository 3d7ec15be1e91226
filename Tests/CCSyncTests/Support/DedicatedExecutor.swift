import Foundation

/// A task executor with one thread of its own, for async tests whose deadlines must not run
/// out while they wait for the cooperative pool.
///
/// Swift Testing runs synchronous tests on the cooperative pool, which has one thread per
/// core. On 2 cores, two long tests that block (a kill loop, a child process's lifetime) hold
/// the whole pool for tens of seconds; an async test waiting with a deadline would then see
/// its deadline pass while neither its body nor the task it waits for could run. Run both
/// on this executor (`withTaskExecutorPreference(DedicatedExecutor.shared)` and
/// `Task(executorPreference: DedicatedExecutor.shared)`) and they need no pool thread.
///
/// `@unchecked Sendable`: `jobs` is guarded by `condition`.
final class DedicatedExecutor: TaskExecutor, @unchecked Sendable {
  /// One executor for the whole test process; its thread lives as long as the process.
  static let shared = DedicatedExecutor()

  private let condition = NSCondition()
  private var jobs: [UnownedJob] = []

  /// An executor of `threads` threads that live as long as the process (a test of code that
  /// must not block the cooperative pool models a 2-core machine's pool with 2 of them, out of
  /// reach of the other tests that block the real one).
  init(name: String = "DedicatedExecutor", threads: Int = 1) {
    for _ in 0..<threads {
      let thread = Thread { [unowned self] in runJobs() }
      thread.name = name
      thread.start()
    }
  }

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    condition.lock()
    jobs.append(job)
    condition.signal()
    condition.unlock()
  }

  private func runJobs() -> Never {
    while true {
      condition.lock()
      while jobs.isEmpty { condition.wait() }
      let job = jobs.removeFirst()
      condition.unlock()
      job.runSynchronously(on: asUnownedTaskExecutor())
    }
  }
}
