import CCSync
import Foundation
import Synchronization

/// How late a task sleeping 10 ms in a loop wakes up while 64 other tasks await updates of a
/// file another process keeps locked (`flock(1)` for `--hold` seconds), or await its lock:
/// with the `async` calls (`updateAsync`, `lockAsync`), whose waits run on the library's own
/// threads, and with the blocking `update` and `lock` called from tasks, whose waits hold the
/// cooperative pool's threads (two on a 2-core machine).
///
/// The delay of a wake-up is how long a 10 ms sleep took beyond 10 ms; the sleeper's start
/// counts as a wake-up due when the 64 tasks were started. `swift run -c release ccsync-bench
/// async-wakeup`. The goal for the `async` calls is a worst wake-up delay under 20 ms.
enum AsyncWakeUpBenchmark {
  static let usage = "USAGE: ccsync-bench async-wakeup [--updates N] [--hold SECONDS] [--rounds N]"

  /// The ways the 64 tasks update, or take the file's lock and let it go.
  enum Mode: String, CaseIterable {
    case async = "updateAsync"
    case blocking = "update (blocking, in tasks)"
    case lockAsync = "lockAsync"
    case lockBlocking = "lock (blocking, in tasks)"

    /// Whether the tasks update the file (and the counter counts them) rather than only lock it.
    var updates: Bool { self == .async || self == .blocking }
  }

  /// One round's figures.
  struct Round {
    var worstDelay: Duration
    var sleeps: Int
    var updatesDone: Duration
    var counter: Int
  }

  static func run(arguments: [String]) {
    let updates = Int(BenchmarkProcess.option("--updates", in: arguments) ?? "64") ?? 64
    let hold = BenchmarkProcess.option("--hold", in: arguments) ?? "1"
    let rounds = Int(BenchmarkProcess.option("--rounds", in: arguments) ?? "3") ?? 3
    guard updates > 0, rounds > 0, Double(hold) != nil else { BenchmarkProcess.fail(usage, code: 64) }
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/flock") else {
      BenchmarkProcess.fail("/usr/bin/flock is needed (util-linux)")
    }
    print("async wake-up: a task sleeping 10 ms in a loop while \(updates) tasks await updates of a file")
    print("flock(1) holds for \(hold) s; \(ProcessInfo.processInfo.activeProcessorCount) cores; worst delay beyond 10 ms")
    for mode in Mode.allCases {
      var worst = Duration.zero
      for round in 1...rounds {
        let figures = measure(mode, updates: updates, hold: hold)
        worst = max(worst, figures.worstDelay)
        print("  \(mode.rawValue), round \(round): worst wake-up delay \(milliseconds(figures.worstDelay)) over "
          + "\(figures.sleeps) sleeps; \(updates) calls done after \(milliseconds(figures.updatesDone))"
          + (mode.updates ? "; counter \(figures.counter)" : ""))
      }
      print("\(mode.rawValue): worst wake-up delay \(milliseconds(worst)) over \(rounds) rounds")
    }
  }

  /// Runs one round on the cooperative pool and waits for it on this (main) thread.
  private static func measure(_ mode: Mode, updates: Int, hold: String) -> Round {
    let directory = FileManager.default.temporaryDirectory.path + "/ccsync-async-bench-" + UUID().uuidString
    try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = directory + "/settings.json"
    _ = FileManager.default.createFile(atPath: path, contents: Data(#"{"counter": 0}"#.utf8))
    let storage = CodableStorage(
      defaultValue: ContentionBenchmark.CounterSettings(), path: path, updateMode: .manual,
      options: StorageOptions(flushesAtExit: false, logger: .silent))
    let holder = holdLock(of: path, seconds: hold)
    defer { holder.waitUntilExit() }

    let outcome = Mutex<Round?>(nil)
    let finished = DispatchSemaphore(value: 0)
    Task {
      let round = await contend(mode, storage: storage, path: path, updates: updates)
      outcome.withLock { $0 = round }
      finished.signal()
    }
    finished.wait()
    return outcome.withLock { $0! }
  }

  /// The 64 updates and the sleeper, at once; the sleeper sleeps until every update is done.
  private static func contend(
    _ mode: Mode, storage: CodableStorage<ContentionBenchmark.CounterSettings>, path: String, updates: Int
  ) async -> Round {
    let file = SharedFile(path: path, durable: false, logger: .silent)
    let done = DoneCount()
    let start = ContinuousClock.now
    return await withTaskGroup(of: (Duration, Int)?.self) { group in
      for _ in 0..<updates {
        group.addTask {
          switch mode {
          case .async: _ = try? await storage.updateAsync { $0.counter += 1 }
          case .blocking: _ = try? storage.update { $0.counter += 1 }
          case .lockAsync: (try? await file.lockAsync())?.release()
          case .lockBlocking: (try? file.lock())?.release()
          }
          done.value.add(1, ordering: .relaxed)
          return nil
        }
      }
      group.addTask {
        // The task's own start counts as a wake-up due at once: with the pool's threads held
        // it cannot start at all until they are free.
        var worst = ContinuousClock.now - start
        var sleeps = 0
        while done.value.load(ordering: .relaxed) < updates {
          let before = ContinuousClock.now
          try? await Task.sleep(for: .milliseconds(10))
          worst = max(worst, ContinuousClock.now - before - .milliseconds(10))
          sleeps += 1
        }
        return (worst, sleeps)
      }
      var round = Round(worstDelay: .zero, sleeps: 0, updatesDone: .zero, counter: 0)
      for await result in group {
        if let (worst, sleeps) = result {
          (round.worstDelay, round.sleeps) = (worst, sleeps)
        } else if done.value.load(ordering: .relaxed) == updates, round.updatesDone == .zero {
          round.updatesDone = ContinuousClock.now - start
        }
      }
      round.counter = storage.wrappedValue.counter
      return round
    }
  }

  /// Starts `flock(1)` holding the file's lock for `seconds` and returns once it holds it.
  private static func holdLock(of path: String, seconds: String) -> Process {
    let holder = Process()
    holder.executableURL = URL(fileURLWithPath: "/usr/bin/flock")
    holder.arguments = [path + ".lock", "sleep", seconds]
    do {
      try holder.run()
    } catch {
      BenchmarkProcess.fail("flock: \(error)")
    }
    let probe = SharedFile(path: path, durable: false, logger: .silent)
    while (try? probe.withLock(wait: .nonBlocking) {}) != nil {
      Thread.sleep(forTimeInterval: 0.001)
    }
    return holder
  }

  /// How many updates have returned. `Sendable`: an `Atomic`.
  private final class DoneCount: Sendable {
    let value = Atomic<Int>(0)
  }

  private static func milliseconds(_ duration: Duration) -> String {
    String(format: "%.1f ms", Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15)
  }
}
