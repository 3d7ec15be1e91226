import CCSyncSystem
import Glibc

/// Counts this process's threads (the entries of `/proc/self/task`) every `interval` on a
/// thread of its own, and keeps the highest count seen, for the benchmark and the test that
/// bound how many threads a client of the library holds. The sampler's own thread is counted
/// (it is one of the process's threads while it runs); callers subtract it.
///
/// `Sendable`: the counts are behind a `Protected`; the thread is joined by ``stop()``.
package final class ThreadCountSampler: Sendable {
  private struct Counts {
    var peak = 0
    var samples = 0
    var stopping = false
  }

  private let counts = Protected(Counts())
  private let thread: Protected<BackgroundThread?> = Protected(nil)

  /// Starts sampling every `interval`.
  /// - Throws: `SystemError` when the thread cannot be started.
  package init(interval: Duration = .microseconds(500)) throws(SystemError) {
    let started = try BackgroundThread(name: "thread-sampler", stackSize: 64 * 1024) { [counts] in
      while true {
        let current = ThreadCountSampler.currentCount()
        let stopping = counts.withLock { counts -> Bool in
          counts.peak = max(counts.peak, current)
          counts.samples += 1
          return counts.stopping
        }
        if stopping { return }
        ContinuousClock.sleepThread(for: interval)
      }
    }
    thread.withLock { $0 = started }
  }

  /// The most threads seen at once so far, the sampler's own included.
  package var peak: Int { counts.withLock { $0.peak } }

  /// How many samples were taken.
  package var samples: Int { counts.withLock { $0.samples } }

  /// Takes a last sample, ends the thread and waits for it; returns the peak.
  @discardableResult
  package func stop() -> Int {
    counts.withLock { $0.stopping = true }
    thread.withLock { thread in
      thread?.join()
      thread = nil
    }
    return peak
  }

  /// How many threads this process has now: the entries of `/proc/self/task`.
  package static func currentCount() -> Int {
    guard let directory = opendir("/proc/self/task") else { return 0 }
    defer { closedir(directory) }
    var count = 0
    while let entry = readdir(directory) {
      if entry.pointee.d_name.0 != 0x2E { count += 1 }  // not "." or ".."
    }
    return count
  }
}
