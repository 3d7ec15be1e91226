import CCSync

/// What one `ccsync stress` run measured, computed from every worker's samples
/// (``StressStatistics``), printed as text or JSON (docs/CLI.md, "stress").
struct StressReport {
  /// One worker: a thread of a process.
  struct Worker {
    var process: Int
    var thread: Int
    /// All its operations, and those counted for fairness (while every worker ran).
    var operations: Int
    var counted: Int
  }

  /// An increment whose read did not match the write before it, with its worker.
  struct Mismatch {
    var process: Int
    var thread: Int
    var iteration: Int
    var read: Int64
    var expected: Int64
  }

  /// The integer the increments worked on (update mode).
  struct Counter {
    var pathText: String
    var before: Int64
    var after: Int64
  }

  var processes: Int
  var threads: Int
  var workload: StressWorkload
  var overEtcd: Bool
  /// `--iterations`, or `nil` for a `--duration` run.
  var iterations: Int?
  var duration: Duration?
  /// From the first worker started to the last one ended, nanoseconds.
  var elapsed: Int64
  var operations = 0
  var writes = 0
  var reads = 0
  /// Operations under the shared lock (reads, and shared holds in lock mode).
  var sharedOperations = 0
  var wait = StressStatistics.Distribution.empty
  var held = StressStatistics.Distribution.empty
  var retries: Int64 = 0
  var operationsRetried = 0
  var mostRetries: Int64 = 0
  var workers: [Worker] = []
  var fairness: StressStatistics.Fairness?
  var fairnessWindow: Int64 = 0
  var counter: Counter?
  var mismatches: [Mismatch] = []
  var overlaps = 0
  var overlapExamples: [(earlier: (process: Int, thread: Int, iteration: Int), later: (process: Int, thread: Int, iteration: Int))] = []
  var histogram: [StressStatistics.Bucket] = []
  var timeline: [StressStatistics.Second] = []
  var gateFailures: [String] = []
  var maxP99: Duration?
  var minFairness: Double?

  /// Increments that went missing: writes made against what the integer grew by.
  var lostUpdates: Int64 {
    guard let counter else { return 0 }
    return Int64(writes) - (counter.after &- counter.before)
  }

  /// Whether the run fails: lost updates, a broken chain, overlapping holders, or a figure
  /// the gate refused.
  var failed: Bool { lostUpdates != 0 || !mismatches.isEmpty || overlaps > 0 || !gateFailures.isEmpty }

  /// Computes every figure.
  /// - Parameters:
  ///   - samples: per worker (process-major: `process * threads + thread`), its samples.
  ///   - start: the run's start, a ``MachineStamp``; the timeline counts from it.
  init(
    samples: [[StressSample]], processes: Int, threads: Int, workload: StressWorkload, overEtcd: Bool,
    duration: Duration?, start: Int64, elapsed: Int64, counter: Counter?, maxP99: Duration?, minFairness: Double?
  ) {
    self.processes = processes
    self.threads = threads
    self.workload = workload
    self.overEtcd = overEtcd
    if case .iterations(let count) = workload.length { iterations = count }
    self.duration = duration
    self.elapsed = elapsed
    self.counter = counter
    self.maxP99 = maxP99
    self.minFairness = minFairness

    var waits: [Int64] = []
    var holds: [Int64] = []
    var increments: [StressStatistics.Increment] = []
    var lockHolds: [StressStatistics.Hold] = []
    var completions: [(completed: Int64, wait: Int64)] = []
    var fairnessInput: [(firstRequest: Int64, completions: [Int64])] = []
    for (index, list) in samples.enumerated() {
      for sample in list {
        // Over etcd a write waits for no lock: its wait is the time to a successful swap.
        let wait = overEtcd && sample.kind == .write ? sample.released - sample.requested : sample.acquired - sample.requested
        waits.append(wait)
        holds.append(sample.released - sample.acquired)
        completions.append((sample.released, wait))
        if sample.kind == .write {
          writes += 1
          increments.append(
            StressStatistics.Increment(worker: index, iteration: Int(sample.iteration), acquired: sample.acquired, read: sample.read, wrote: sample.wrote))
        } else if sample.kind == .read {
          reads += 1
        }
        if !sample.kind.isExclusive { sharedOperations += 1 }
        if sample.retries > 0 {
          retries += sample.retries
          operationsRetried += 1
          mostRetries = max(mostRetries, sample.retries)
        }
        if workload.mode == .lock {
          lockHolds.append(
            StressStatistics.Hold(worker: index, iteration: Int(sample.iteration), acquired: sample.acquired, released: sample.released, exclusive: sample.kind.isExclusive))
        }
      }
      fairnessInput.append((list.map(\.requested).min() ?? 0, list.map(\.released)))
    }
    operations = waits.count
    wait = StressStatistics.distribution(waits)
    held = StressStatistics.distribution(holds)
    histogram = StressStatistics.histogram(waits)
    timeline = StressStatistics.timeline(completions, start: start, end: start + elapsed)
    let (counted, window) = StressStatistics.operationsWhileAllRan(fairnessInput)
    fairnessWindow = window
    fairness = StressStatistics.fairness(counted)
    workers = samples.indices.map {
      Worker(process: $0 / threads, thread: $0 % threads, operations: samples[$0].count, counted: counted[$0])
    }
    if let counter {
      mismatches = StressStatistics.mismatches(increments, initial: counter.before).map {
        Mismatch(
          process: $0.increment.worker / threads, thread: $0.increment.worker % threads, iteration: $0.increment.iteration,
          read: $0.increment.read, expected: $0.expected)
      }
    }
    let found = StressStatistics.overlaps(lockHolds)
    overlaps = found.count
    overlapExamples = found.prefix(20).map { pair in
      ((pair.earlier.worker / threads, pair.earlier.worker % threads, pair.earlier.iteration),
       (pair.later.worker / threads, pair.later.worker % threads, pair.later.iteration))
    }
    gateFailures = StressStatistics.gateFailures(
      waitP99: wait.p99, lowestShare: fairness?.lowestShare, maxP99: maxP99.map { $0.nanoseconds }, minFairness: minFairness)
  }

  /// Operations per second over the whole run.
  var operationsPerSecond: Double { elapsed > 0 ? Double(operations) * 1e9 / Double(elapsed) : 0 }
  /// Increments per second (update mode); lock holds per second (lock mode).
  var updatesPerSecond: Double {
    elapsed > 0 ? Double(workload.mode == .update ? writes : operations) * 1e9 / Double(elapsed) : 0
  }

  private var workerCount: Int { processes * threads }

  /// The text report: the five lines `ccsync stress` always printed, then the new figures
  /// and the histogram.
  var lines: [String] {
    let perWorker = workerCount > 0 ? Int((Double(operations) / Double(workerCount)).rounded()) : 0
    var lines = [
      "processes: \(processes)",
      "iterations: \(iterations ?? perWorker)",
      "seconds: \(decimal(Double(elapsed) / 1e9, places: 3))",
      "updates per second: \(elapsed > 0 ? String(Int(updatesPerSecond.rounded())) : "-")",
      "lost updates: \(lostUpdates)",
      "threads: \(threads) per process (\(workerCount) workers)",
      "workload: \(workload.mode.rawValue), \(overEtcd ? "etcd" : workload.relaxed ? "file, relaxed (no fsync)" : "file, durable"), hold \(secondsText(workload.hold)) s, shared \(decimal(workload.shared, places: 2))"
        + (duration.map { ", duration \(secondsText($0)) s" } ?? ""),
      "operations: \(operations) ("
        + (workload.mode == .update ? "\(writes) writes, \(reads) reads" : "\(operations - sharedOperations) exclusive, \(sharedOperations) shared")
        + "), \(decimal(operationsPerSecond, places: 1)) per second",
    ]
    let waitName = overEtcd && workload.mode == .update ? "time to a successful swap" : "wait for the lock"
    lines.append("\(waitName): " + StressReport.percentilesText(wait))
    lines.append("time held: " + StressReport.percentilesText(held))
    if let fairness, let lowest = workers.indices.contains(fairness.lowestWorker) ? workers[fairness.lowestWorker] : nil {
      let window = fairnessWindow > 0 ? " over \(StressStatistics.timeText(fairnessWindow)) while all ran" : " over the whole run"
      lines.append(
        "fairness: lowest share \(decimal(fairness.lowestShare, places: 3)) of the mean (process \(lowest.process) thread \(lowest.thread)), Jain's index \(decimal(fairness.jainIndex, places: 3))\(window)")
    }
    if overEtcd && workload.mode == .update {
      lines.append("retries: \(retries) (\(operationsRetried) operations retried, at most \(mostRetries) for one)")
    }
    if workload.mode == .lock {
      lines.append("overlapping holders: \(overlaps)")
      for example in overlapExamples.prefix(5) {
        lines.append(
          "  process \(example.later.process) thread \(example.later.thread) iteration \(example.later.iteration) held it while process \(example.earlier.process) thread \(example.earlier.thread) iteration \(example.earlier.iteration) did")
      }
    }
    if !mismatches.isEmpty {
      lines.append("increments that read a value the previous one did not write: \(mismatches.count)")
      var byWorker: [Int: [Mismatch]] = [:]
      for mismatch in mismatches { byWorker[mismatch.process * threads + mismatch.thread, default: []].append(mismatch) }
      for key in byWorker.keys.sorted() {
        let list = byWorker[key]!
        let shown = list.prefix(10).map { "\($0.iteration) (read \($0.read), expected \($0.expected))" }.joined(separator: ", ")
        lines.append("  process \(list[0].process) thread \(list[0].thread) iterations \(shown)\(list.count > 10 ? ", and \(list.count - 10) more" : "")")
      }
    }
    lines.append("\(waitName), histogram (log scale):")
    lines += StressReport.histogramLines(histogram)
    return lines
  }

  /// `p50 1.2 ms, p90 ..., p99 ..., p99.9 ..., max ...`.
  static func percentilesText(_ distribution: StressStatistics.Distribution) -> String {
    [("p50", distribution.p50), ("p90", distribution.p90), ("p99", distribution.p99), ("p99.9", distribution.p999), ("max", distribution.max)]
      .map { "\($0.0) \(StressStatistics.timeText($0.1))" }.joined(separator: ", ")
  }

  /// The histogram drawn with bars of █, 40 at most, one at least for a bucket in use.
  static func histogramLines(_ buckets: [StressStatistics.Bucket]) -> [String] {
    let largest = buckets.map(\.count).max() ?? 0
    let labels = buckets.map { $0.upperBound == .max ? "> 100 s" : "≤ " + StressStatistics.timeText($0.upperBound) }
    let width = labels.map(\.count).max() ?? 0
    return zip(labels, buckets).map { label, bucket in
      let length = largest > 0 ? (bucket.count * 40 + largest - 1) / largest : 0
      let bar = String(repeating: "█", count: length)
      return "  " + String(repeating: " ", count: width - label.count) + label + " │" + bar
        + String(repeating: " ", count: 40 - length) + " \(bucket.count)"
    }
  }
}
