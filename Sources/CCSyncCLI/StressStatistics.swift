/// The figures `ccsync stress` reports, computed from its samples: percentiles, fairness, the
/// log-scale histogram, the per-second timeline, and the two correctness checks (a broken
/// chain of increments, overlapping lock holders). Pure functions of their arguments, so tests
/// check them on samples they construct. Times are nanoseconds (`Int64`).
enum StressStatistics {
  /// A distribution of times: the percentiles the report gives (nearest rank), the maximum
  /// and the mean, in nanoseconds.
  struct Distribution: Equatable, Sendable {
    var count: Int
    var p50: Int64
    var p90: Int64
    var p99: Int64
    var p999: Int64
    var max: Int64
    var mean: Int64

    static let empty = Distribution(count: 0, p50: 0, p90: 0, p99: 0, p999: 0, max: 0, mean: 0)
  }

  /// The percentile of `sorted` (ascending) at `perMille` thousandths, by nearest rank: the
  /// smallest value that at least that share of the values do not exceed. Integer
  /// arithmetic, so p99 of 100 values is the 99th, not the 100th by a rounding error.
  static func percentile(perMille: Int, ofSorted sorted: [Int64]) -> Int64 {
    guard !sorted.isEmpty else { return 0 }
    let rank = (perMille * sorted.count + 999) / 1000
    return sorted[min(max(rank, 1), sorted.count) - 1]
  }

  /// The distribution of `values`, in any order.
  static func distribution(_ values: [Int64]) -> Distribution {
    guard !values.isEmpty else { return .empty }
    let sorted = values.sorted()
    var total = 0.0
    for value in sorted { total += Double(value) }
    return Distribution(
      count: sorted.count,
      p50: percentile(perMille: 500, ofSorted: sorted), p90: percentile(perMille: 900, ofSorted: sorted),
      p99: percentile(perMille: 990, ofSorted: sorted), p999: percentile(perMille: 999, ofSorted: sorted),
      max: sorted[sorted.count - 1], mean: Int64((total / Double(sorted.count)).rounded()))
  }

  /// How evenly the workers got the lock.
  struct Fairness: Equatable, Sendable {
    /// The smallest count against the mean count (1 when all are equal, 0 for a worker that
    /// got nothing).
    var lowestShare: Double
    /// Jain's fairness index, (Σx)² / (n·Σx²): 1 when all are equal, 1/n when one worker got
    /// everything.
    var jainIndex: Double
    /// The position of the worker with the smallest count.
    var lowestWorker: Int
  }

  /// The fairness of per-worker operation counts; `nil` when there are none.
  static func fairness(_ counts: [Int]) -> Fairness? {
    guard let lowest = counts.indices.min(by: { counts[$0] < counts[$1] }) else { return nil }
    var sum = 0.0
    var squares = 0.0
    for count in counts {
      sum += Double(count)
      squares += Double(count) * Double(count)
    }
    guard sum > 0 else { return Fairness(lowestShare: 0, jainIndex: 0, lowestWorker: lowest) }
    let mean = sum / Double(counts.count)
    return Fairness(
      lowestShare: Double(counts[lowest]) / mean, jainIndex: sum * sum / (Double(counts.count) * squares),
      lowestWorker: lowest)
  }

  /// Each worker's operations counted while every worker was running: from the latest first
  /// request to the earliest last completion. Counting to the end instead would make every
  /// `--iterations` run perfectly fair (each worker does M in the end), however long one
  /// waited. Falls back to whole counts when that window is empty (a worker finished before
  /// another started).
  /// - Parameter workers: per worker, its first request and its completion stamps.
  /// - Returns: the counts and the window's length in nanoseconds (0 for whole counts).
  static func operationsWhileAllRan(_ workers: [(firstRequest: Int64, completions: [Int64])]) -> (counts: [Int], window: Int64) {
    let whole = workers.map(\.completions.count)
    guard workers.count > 1, workers.allSatisfy({ !$0.completions.isEmpty }) else { return (whole, 0) }
    let start = workers.map(\.firstRequest).max()!
    let end = workers.map { $0.completions.max()! }.min()!
    guard end > start else { return (whole, 0) }
    let counts = workers.map { worker in worker.completions.reduce(0) { $0 + ($1 >= start && $1 <= end ? 1 : 0) } }
    return (counts, end - start)
  }

  /// The upper bounds of the histogram's buckets: 1, 2 and 5 of every decade from 1 µs to
  /// 100 s, in nanoseconds; a last bucket takes what is longer.
  static let bucketBounds: [Int64] = {
    var bounds: [Int64] = []
    var decade: Int64 = 1_000
    while decade <= 100_000_000_000 {
      bounds += [decade, decade * 2, decade * 5]
      decade *= 10
    }
    return Array(bounds.prefix { $0 <= 100_000_000_000 })
  }()

  /// One bucket of the histogram: the values above the previous bound up to `upperBound`
  /// (`Int64.max` for the last).
  struct Bucket: Equatable, Sendable {
    var upperBound: Int64
    var count: Int
  }

  /// The index of the bucket `value` falls in.
  static func bucketIndex(of value: Int64) -> Int {
    var low = 0
    var high = bucketBounds.count
    while low < high {
      let middle = (low + high) / 2
      if bucketBounds[middle] < value { low = middle + 1 } else { high = middle }
    }
    return low
  }

  /// Counts per bucket, for every bucket (the last, beyond 100 s, included).
  static func bucketCounts(_ values: [Int64]) -> [Int] {
    var counts = [Int](repeating: 0, count: bucketBounds.count + 1)
    for value in values { counts[bucketIndex(of: value)] += 1 }
    return counts
  }

  /// The log-scale histogram of `values`, from the first bucket holding a value to the last.
  static func histogram(_ values: [Int64]) -> [Bucket] {
    histogram(counts: bucketCounts(values))
  }

  /// The histogram of counts from ``bucketCounts(_:)``, trimmed to the buckets in use.
  static func histogram(counts: [Int]) -> [Bucket] {
    guard let first = counts.firstIndex(where: { $0 > 0 }), let last = counts.lastIndex(where: { $0 > 0 }) else { return [] }
    return (first...last).map { Bucket(upperBound: $0 < bucketBounds.count ? bucketBounds[$0] : .max, count: counts[$0]) }
  }

  /// The upper bound of the bucket holding the `perMille` percentile, from bucket counts: the
  /// live status's estimate, which needs no sorting.
  static func percentileBound(perMille: Int, counts: [Int]) -> Int64? {
    let total = counts.reduce(0, +)
    guard total > 0 else { return nil }
    let rank = (perMille * total + 999) / 1000
    var seen = 0
    for (index, count) in counts.enumerated() {
      seen += count
      if seen >= rank { return index < bucketBounds.count ? bucketBounds[index] : .max }
    }
    return nil
  }

  /// One second of the run.
  struct Second: Equatable, Sendable {
    /// Seconds since the start: this second covers [index, index + 1).
    var index: Int
    /// Operations completed in it.
    var operations: Int
    /// The nanoseconds of the run it covers: a whole second but for the last.
    var covered: Int64 = 1_000_000_000
    /// p99 and maximum of their waits, nanoseconds (0 when none).
    var waitP99: Int64
    var waitMax: Int64

    /// Operations per second over the time it covers.
    var rate: Double { covered > 0 ? Double(operations) * 1e9 / Double(covered) : 0 }
  }

  /// The run second by second, from `start` to the last completion; empty seconds included.
  /// - Parameters:
  ///   - operations: each operation's completion stamp and wait.
  ///   - end: the end of the run, which the last second covers up to (so that its rate is not
  ///     shown as a fall).
  static func timeline(_ operations: [(completed: Int64, wait: Int64)], start: Int64, end: Int64? = nil) -> [Second] {
    var waits: [[Int64]] = []
    for operation in operations {
      let index = Int(max(0, operation.completed - start) / 1_000_000_000)
      while waits.count <= index { waits.append([]) }
      waits[index].append(operation.wait)
    }
    return waits.enumerated().map { index, values in
      let sorted = values.sorted()
      let secondStart = start + Int64(index) * 1_000_000_000
      let covered = index == waits.count - 1 ? min(1_000_000_000, max(1, (end ?? secondStart + 1_000_000_000) - secondStart)) : 1_000_000_000
      return Second(
        index: index, operations: values.count, covered: covered, waitP99: percentile(perMille: 990, ofSorted: sorted),
        waitMax: sorted.last ?? 0)
    }
  }

  /// One increment, as the chain check sees it.
  struct Increment: Equatable, Sendable {
    var worker: Int
    var iteration: Int
    /// When its body ran under the lock (the order of the increments).
    var acquired: Int64
    /// The value it read and the value it wrote.
    var read: Int64
    var wrote: Int64
  }

  /// An increment that read something other than what the one before it wrote: the trace a
  /// writer outside the lock (or two holders at once) leaves.
  struct Mismatch: Equatable, Sendable {
    var increment: Increment
    var expected: Int64
  }

  /// The increments, in the order they held the lock, whose read did not match the previous
  /// increment's write (the first must read `initial`).
  static func mismatches(_ increments: [Increment], initial: Int64) -> [Mismatch] {
    var expected = initial
    var found: [Mismatch] = []
    for increment in increments.sorted(by: { $0.acquired < $1.acquired }) {
      if increment.read != expected { found.append(Mismatch(increment: increment, expected: expected)) }
      expected = increment.wrote
    }
    return found
  }

  /// One hold of the lock, for the overlap check.
  struct Hold: Equatable, Sendable {
    var worker: Int
    var iteration: Int
    var acquired: Int64
    var released: Int64
    var exclusive: Bool
  }

  /// Pairs of holds that overlap where the lock forbids it: an exclusive hold with any other,
  /// or a shared one with an exclusive one. Each hold's stamps are taken inside the lock, so
  /// any overlap is a violation. Each offending hold is reported once, with the earlier hold
  /// it overlaps that ends last.
  static func overlaps(_ holds: [Hold]) -> [(earlier: Hold, later: Hold)] {
    var found: [(Hold, Hold)] = []
    var lastEnding: Hold?
    var lastEndingExclusive: Hold?
    for hold in holds.sorted(by: { $0.acquired < $1.acquired }) {
      let rival = hold.exclusive ? lastEnding : lastEndingExclusive
      if let rival, rival.released > hold.acquired { found.append((rival, hold)) }
      if lastEnding.map({ hold.released > $0.released }) ?? true { lastEnding = hold }
      if hold.exclusive, lastEndingExclusive.map({ hold.released > $0.released }) ?? true { lastEndingExclusive = hold }
    }
    return found
  }

  /// What the CI gate found wrong: one sentence per figure that missed.
  /// - Parameters:
  ///   - waitP99: the measured p99 wait, nanoseconds.
  ///   - lowestShare: the measured lowest share against the mean.
  ///   - maxP99: `--max-p99`, nanoseconds.
  ///   - minFairness: `--min-fairness`.
  static func gateFailures(waitP99: Int64, lowestShare: Double?, maxP99: Int64?, minFairness: Double?) -> [String] {
    var failures: [String] = []
    if let maxP99, waitP99 > maxP99 {
      failures.append("p99 wait \(StressStatistics.timeText(waitP99)) is above --max-p99 \(StressStatistics.timeText(maxP99))")
    }
    if let minFairness, let lowestShare, lowestShare < minFairness {
      failures.append("fairness (lowest share against the mean) \(decimal(lowestShare, places: 3)) is below --min-fairness \(decimal(minFairness, places: 3))")
    }
    return failures
  }

  /// `nanoseconds` as a person reads it: `850 ns`, `12.3 µs`, `4.56 ms`, `1.23 s`.
  static func timeText(_ nanoseconds: Int64) -> String {
    let value = Double(nanoseconds)
    func three(_ scaled: Double, _ unit: String) -> String {
      let places = scaled >= 100 ? 0 : scaled >= 10 ? 1 : 2
      return decimal(scaled, places: places) + " " + unit
    }
    if nanoseconds == .max { return "∞" }
    if nanoseconds < 1_000 { return "\(nanoseconds) ns" }
    if nanoseconds < 1_000_000 { return three(value / 1e3, "µs") }
    if nanoseconds < 1_000_000_000 { return three(value / 1e6, "ms") }
    return three(value / 1e9, "s")
  }
}
