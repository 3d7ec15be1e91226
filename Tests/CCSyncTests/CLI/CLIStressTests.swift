import Foundation
import Testing

#if canImport(FoundationXML)
  import FoundationXML
#endif

@testable import CCSyncCLI

/// `ccsync stress`: the statistics on known samples, and real runs of the built binary (its
/// workers are real processes): a known hold time in the tail, the JSON and its
/// documentation, the SVG, a writer bypassing the lock, the lock mode's overlap check, the gate
/// and bad input.
@Suite struct CLIStressTests {
  // MARK: Statistics on known samples

  @Test func percentilesAreByNearestRank() {
    let hundred = StressStatistics.distribution((1...100).map { Int64($0) }.shuffled())
    #expect(hundred == StressStatistics.Distribution(count: 100, p50: 50, p90: 90, p99: 99, p999: 100, max: 100, mean: 51))
    let thousand = StressStatistics.distribution((1...1000).map { Int64($0) }.reversed())
    #expect((thousand.p50, thousand.p90, thousand.p99, thousand.p999, thousand.max) == (500, 900, 990, 999, 1000))
    let one = StressStatistics.distribution([42])
    #expect((one.p50, one.p99, one.p999, one.max, one.mean) == (42, 42, 42, 42, 42))
    // A tail of 2 slow operations in 200 shows at p99 and above, not at p90.
    let tail = StressStatistics.distribution(Array(repeating: 1_000, count: 198) + [50_000_000, 60_000_000])
    #expect(tail.p90 == 1_000 && tail.p99 == 1_000 && tail.p999 == 60_000_000 && tail.max == 60_000_000)
    #expect(StressStatistics.distribution([]) == .empty)
  }

  @Test func fairnessOfEqualAndStarvedWorkers() throws {
    let equal = try #require(StressStatistics.fairness([25, 25, 25, 25]))
    #expect(equal.lowestShare == 1 && equal.jainIndex == 1)
    let starved = try #require(StressStatistics.fairness([100, 100, 100, 4]))
    #expect(starved.lowestWorker == 3)
    #expect(abs(starved.lowestShare - 4.0 / 76.0) < 1e-12)
    #expect(abs(starved.jainIndex - (304.0 * 304.0) / (4.0 * 30_016.0)) < 1e-12)
    let monopoly = try #require(StressStatistics.fairness([90, 0, 0]))
    #expect(monopoly.lowestShare == 0 && abs(monopoly.jainIndex - 1.0 / 3.0) < 1e-12)
    #expect(StressStatistics.fairness([]) == nil)
  }

  /// A worker that waits while the others take the lock in turn: its operations, counted while
  /// all ran, are few; the report's fairness and the gate see it.
  @Test func aStarvingWorkerIsDetectedByFairness() {
    var samples: [[StressSample]] = []
    for worker in 0..<3 {
      // Each of the first two: 100 operations of 1 ms each from t = 0; the third: its first
      // operation waits 90.5 ms, then 9 more, all by the others' last at 100 ms.
      let count = worker < 2 ? 100 : 10
      samples.append((0..<count).map { index in
        let done = worker < 2 ? Int64(index + 1) * 1_000_000 : 91_000_000 + Int64(index) * 1_000_000
        let requested = worker < 2 ? Int64(index) * 1_000_000 : (index == 0 ? 0 : done - 1_000_000)
        return StressSample(iteration: Int64(index), kind: .exclusiveLock, requested: requested, acquired: done - 500_000, released: done)
      })
    }
    var workload = StressWorkload()
    workload.mode = .lock
    let report = StressReport(
      samples: samples, processes: 3, threads: 1, workload: workload, overEtcd: false, duration: nil, start: 0,
      elapsed: 100_000_000, counter: nil, maxP99: nil, minFairness: 0.5)
    #expect(report.workers.map(\.counted) == [100, 100, 10])
    #expect(report.fairness?.lowestWorker == 2)
    #expect((report.fairness?.lowestShare ?? 1) < 0.2)
    #expect((report.fairness?.jainIndex ?? 1) < 0.8)
    #expect(report.gateFailures.count == 1 && report.gateFailures[0].contains("--min-fairness"), "\(report.gateFailures)")
    #expect(report.failed)
    #expect(report.wait.max == 90_500_000)
  }

  @Test func theGateNamesTheFigureThatMissed() {
    let failures = StressStatistics.gateFailures(waitP99: 30_000_000, lowestShare: 0.9, maxP99: 20_000_000, minFairness: 0.5)
    #expect(failures == ["p99 wait 30.0 ms is above --max-p99 20.0 ms"])
    #expect(StressStatistics.gateFailures(waitP99: 10, lowestShare: 0.4, maxP99: 20, minFairness: 0.5).first?.contains("0.400") == true)
    #expect(StressStatistics.gateFailures(waitP99: 10, lowestShare: 1, maxP99: nil, minFairness: nil).isEmpty)
  }

  @Test func histogramBucketsAreLogScale() {
    #expect(StressStatistics.bucketBounds.prefix(4) == [1_000, 2_000, 5_000, 10_000])
    #expect(StressStatistics.bucketBounds.last == 100_000_000_000)
    let histogram = StressStatistics.histogram([1_500, 1_500, 2_000, 45_000_000, 200_000_000_000])
    #expect(histogram.first == StressStatistics.Bucket(upperBound: 2_000, count: 3))
    #expect(histogram.contains(StressStatistics.Bucket(upperBound: 50_000_000, count: 1)))
    #expect(histogram.last == StressStatistics.Bucket(upperBound: .max, count: 1))
    #expect(histogram.reduce(0) { $0 + $1.count } == 5)
    let counts = StressStatistics.bucketCounts(Array(repeating: 1_500, count: 99) + [45_000_000])
    #expect(StressStatistics.percentileBound(perMille: 990, counts: counts) == 2_000)
    #expect(StressStatistics.percentileBound(perMille: 1000, counts: counts) == 50_000_000)
    let lines = StressReport.histogramLines(histogram)
    #expect(lines.count == histogram.count && lines[0].contains("████████████████████████████████████████ 3"))
    #expect(lines.allSatisfy { $0.contains("│") })
  }

  @Test func timelineCountsEachSecond() {
    let operations: [(completed: Int64, wait: Int64)] = [(100, 5), (999_999_999, 7), (2_500_000_000, 9)]
    let timeline = StressStatistics.timeline(operations, start: 0, end: 2_250_000_000 + 250_000_000)
    #expect(timeline.map(\.operations) == [2, 0, 1])
    #expect(timeline[0].waitMax == 7 && timeline[2].waitP99 == 9)
    // The last second covers half a second of the run: its one operation is a rate of 2/s.
    #expect(timeline.map(\.rate) == [2, 0, 2])
  }

  @Test func aBrokenChainOfIncrementsIsFoundAndOverlapsAreFound() {
    typealias Increment = StressStatistics.Increment
    let chain = [
      Increment(worker: 0, iteration: 0, acquired: 10, read: 5, wrote: 6),
      Increment(worker: 1, iteration: 0, acquired: 20, read: 6, wrote: 7),
      Increment(worker: 0, iteration: 1, acquired: 30, read: 0, wrote: 1),  // a writer outside the lock reset it
      Increment(worker: 1, iteration: 1, acquired: 40, read: 1, wrote: 2),
    ]
    #expect(StressStatistics.mismatches(chain.shuffled(), initial: 5) == [StressStatistics.Mismatch(increment: chain[2], expected: 7)])
    #expect(StressStatistics.mismatches(Array(chain.prefix(2)), initial: 5).isEmpty)

    typealias Hold = StressStatistics.Hold
    let apart = [
      Hold(worker: 0, iteration: 0, acquired: 0, released: 10, exclusive: true),
      Hold(worker: 1, iteration: 0, acquired: 11, released: 20, exclusive: true),
      Hold(worker: 2, iteration: 0, acquired: 21, released: 30, exclusive: false),
      Hold(worker: 3, iteration: 0, acquired: 22, released: 25, exclusive: false),
    ]
    #expect(StressStatistics.overlaps(apart).isEmpty, "readers may share")
    let clash = apart + [Hold(worker: 4, iteration: 7, acquired: 24, released: 40, exclusive: true)]
    let found = StressStatistics.overlaps(clash)
    #expect(found.count == 1 && found[0].later.worker == 4 && found[0].earlier.worker == 2)
  }

  @Test func samplesSurviveTheirFile() throws {
    try withTemporaryDirectory { directory in
      let path = directory.file("p0-t0.samples")
      let sink = try StressSampleSink(path: path)
      let written = (0..<3000).map {
        StressSample(iteration: Int64($0), kind: .write, retries: 2, requested: 1, acquired: 2, released: 3, read: Int64($0), wrote: Int64($0) + 1)
      }
      let reader = StressSampleReader(path: path, process: 0, thread: 0)
      for sample in written { try sink.add(sample) }
      try reader.readNew()
      try sink.flush()
      try reader.readNew()
      #expect(reader.samples == written)
    }
  }

  // MARK: Real runs

  /// A worker holding the lock 50 ms keeps the others waiting: it shows in the tail.
  @Test func aKnownHoldTimeShowsInTheTail() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write("{\"counter\": 0}\n", to: file)
      let outcome = try CLI.run(["stress", "--processes", "3", "--iterations", "4", "--hold", "0.05", "--json", file], deadline: .seconds(60))
      #expect(outcome.status == 0, "\(outcome.summary)")
      let report = try Self.object(outcome.standardOutput)
      let wait = try #require(report["wait"] as? [String: Any])
      let held = try #require(report["held"] as? [String: Any])
      #expect(try #require(wait["p99"] as? Double) >= 0.04, "\(wait)")
      #expect(try #require(held["p50"] as? Double) >= 0.05, "\(held)")
      #expect(report["operations"] as? Int == 12 && report["lostUpdates"] as? Int == 0)
      #expect(try CLI.run(["get", file, "counter"]).standardOutput == "12\n")
    }
  }

  /// `--json` parses and holds every field docs/CLI.md documents, and the documentation names
  /// every field it holds; `--plot` writes well-formed SVG with its series, one bar per bucket.
  @Test func jsonHoldsEveryDocumentedFieldAndThePlotIsWellFormed() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      let plot = directory.file("stress.svg")
      let outcome = try CLI.run(
        ["stress", "--processes", "2", "--threads", "2", "--iterations", "20", "--shared", "0.25", "--relaxed", "--json", "--plot", plot, file],
        deadline: .seconds(60))
      #expect(outcome.status == 0, "\(outcome.summary)")
      let report = try Self.object(outcome.standardOutput)
      let fields = [
        "processes", "threads", "workers", "mode", "backend", "durable", "iterations", "duration", "hold", "sharedFraction",
        "seconds", "operations", "writes", "reads", "exclusive", "shared", "operationsPerSecond", "updatesPerSecond",
        "lostUpdates", "wait", "held", "retries", "fairness", "perWorker", "counter", "mismatches", "overlaps", "histogram",
        "timeline", "gate", "passed",
      ]
      #expect(Set(report.keys) == Set(fields), "\(report.keys.sorted())")
      let reference = try String(contentsOf: packageRoot.appendingPathComponent("docs/CLI.md"), encoding: .utf8)
      let nested = [
        "p50", "p90", "p99", "p999", "max", "mean", "total", "operationsRetried", "lowestShare", "jainIndex", "lowestProcess",
        "lowestThread", "window", "counted", "share", "path", "before", "after", "iteration", "read", "expected", "upTo",
        "count", "second", "rate", "waitP99", "waitMax", "maxP99", "minFairness", "failures",
      ]
      for field in fields + nested {
        #expect(reference.contains("`\(field)`"), "docs/CLI.md does not document the JSON field '\(field)'")
      }
      #expect(report["workers"] as? Int == 4 && report["operations"] as? Int == 80 && report["passed"] as? Bool == true)
      #expect((report["writes"] as? Int ?? 0) + (report["reads"] as? Int ?? 0) == 80)
      let perWorker = try #require(report["perWorker"] as? [[String: Any]])
      #expect(perWorker.count == 4 && perWorker.allSatisfy { $0["operations"] as? Int == 20 })
      let histogram = try #require(report["histogram"] as? [[String: Any]])
      #expect(histogram.reduce(0) { $0 + ($1["count"] as? Int ?? 0) } == 80)
      let timeline = try #require(report["timeline"] as? [[String: Any]])
      #expect(timeline.reduce(0) { $0 + ($1["operations"] as? Int ?? 0) } == 80)
      let counter = try #require(report["counter"] as? [String: Any])
      #expect(counter["after"] as? Int == report["writes"] as? Int)

      let svg = try #require(CLI.bytes(plot))
      let elements = SVGElements()
      let parser = XMLParser(data: svg)
      parser.delegate = elements
      #expect(parser.parse(), "the SVG is not well-formed XML: \(String(describing: parser.parserError))")
      #expect(elements.root == "svg")
      #expect(Set(["wait-distribution", "percentiles", "rate", "wait-p99"]).isSubset(of: elements.ids), "\(elements.ids)")
      #expect(elements.bucketBars == histogram.count)
      #expect(elements.polylines == 2)
    }
  }

  /// A writer that replaces the file without taking the lock while the workers run: lost
  /// updates, the increments that read its value named, exit 1.
  @Test func aWriterBypassingTheLockMakesTheRunFail() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      try CLI.write("{\"counter\": 100}\n", to: file)
      let run = try CLI.start(["stress", "--processes", "2", "--duration", "6", "--relaxed", file])
      func counter() -> Int {
        (try? JSONSerialization.jsonObject(with: CLI.bytes(file) ?? Data()) as? [String: Any])?["counter"] as? Int ?? 0
      }
      #expect(waitUntil(deadline: .seconds(20)) { counter() >= 110 }, "the workers did not start")
      // Replaced by rename, as an editor or a careless script would: valid JSON, no lock. A
      // worker's write under way can replace it again before anyone reads it, so it is
      // written until a worker is seen to have counted on from it.
      #expect(
        try waitUntil(deadline: .seconds(20)) {
          let value = counter()
          if (1..<50).contains(value) { return true }
          if value >= 50 { try Data("{\"counter\": 0}\n".utf8).write(to: URL(fileURLWithPath: file), options: .atomic) }
          return false
        }, "no worker read the value written outside the lock")
      let outcome = run.wait(deadline: .seconds(60))
      #expect(outcome.status == 1, "\(outcome.summary)")
      let lines = CLI.lines(outcome.standardOutput)
      #expect(lines.count > 5 && lines[4].hasPrefix("lost updates: ") && lines[4] != "lost updates: 0", "\(lines)")
      #expect(outcome.standardOutput.contains("increments that read a value the previous one did not write: "), "\(outcome.summary)")
      #expect(outcome.standardOutput.contains("(read 0, expected "), "\(outcome.summary)")
      #expect(outcome.standardError.contains("lost updates"), "\(outcome.summary)")
    }
  }

  /// `--mode lock`: holders, exclusive and shared, threads and processes, never overlap.
  @Test func lockModeFindsNoOverlapAndWritesNothing() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      let outcome = try CLI.run(
        ["stress", "--mode", "lock", "--processes", "3", "--threads", "2", "--iterations", "30", "--shared", "0.3", "--hold", "0.0005", file],
        deadline: .seconds(60))
      #expect(outcome.status == 0, "\(outcome.summary)")
      let lines = CLI.lines(outcome.standardOutput)
      #expect(Array(lines.prefix(5)) == ["processes: 3", "iterations: 30"] + lines[2...3] + ["lost updates: 0"])
      #expect(lines.contains("overlapping holders: 0"), "\(lines)")
      #expect(lines.contains { $0.hasPrefix("operations: 180 (") && $0.contains(" shared)") }, "\(lines)")
      #expect(!FileManager.default.fileExists(atPath: file), "lock mode wrote the document")
    }
  }

  /// The gate: a p99 no run can meet exits 1 naming it; a generous one passes.
  @Test func theGateFailsTheRunWithTheFigureThatMissed() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      let strict = try CLI.run(["stress", "--processes", "2", "--iterations", "3", "--hold", "0.02", "--max-p99", "0.000001", file], deadline: .seconds(60))
      #expect(strict.status == 1, "\(strict.summary)")
      #expect(strict.standardError.contains("is above --max-p99 1.00 µs"), "\(strict.summary)")
      #expect(CLI.lines(strict.standardOutput)[4] == "lost updates: 0")
      let generous = try CLI.run(["stress", "--processes", "2", "--iterations", "3", "--max-p99", "60", "--min-fairness", "0", file], deadline: .seconds(60))
      #expect(generous.status == 0, "\(generous.summary)")
    }
  }

  @Test(arguments: [
    (["--processes", "0"], "--processes <n>"), (["--iterations", "0"], "--iterations <m>"), (["--threads", "0"], "--threads <t>"),
    (["--hold", "-1"], "--hold <secs>"), (["--shared", "1.5"], "--shared <r>"), (["--shared", "-0.1"], "--shared <r>"),
    (["--duration", "0"], "--duration <secs>"), (["--mode", "write"], "--mode <mode>"), (["--min-fairness", "2"], "--min-fairness <f>"),
    (["--max-p99", "0"], "--max-p99 <secs>"), (["--iterations", "5", "--duration", "1"], "--iterations"),
  ])
  func badOptionsAreUsageErrorsNamingTheOption(_ options: [String], _ token: String) throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      expectUsageError(try CLI.run(["stress"] + options + [file]), command: "stress", token: token)
      #expect(!FileManager.default.fileExists(atPath: file))
    }
  }

  @Test func sharedOverEtcdAndANonIntegerAreRefusedWritingNothing() throws {
    expectUsageError(try CLI.run(["stress", "--shared", "0.5", "etcd://127.0.0.1:1/k"]), command: "stress", token: "--shared")
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      let text = "{\"counter\": \"seven\"}\n"
      try CLI.write(text, to: file)
      let outcome = try CLI.run(["stress", "--processes", "2", "--iterations", "2", file])
      #expect(outcome.status == 65, "\(outcome.summary)")
      #expect(outcome.standardError.contains("is not an integer"), "\(outcome.summary)")
      #expect(CLI.bytes(file) == Data(text.utf8))
    }
  }

  /// SIGTERM while the workers run: they are stopped, the samples directory is removed, and
  /// `ccsync stress` ends by the signal.
  @Test func aSignalStopsTheWorkersAndLeavesNothingBehind() throws {
    try withTemporaryDirectory { directory in
      let samples = directory.file("tmp")
      try FileManager.default.createDirectory(atPath: samples, withIntermediateDirectories: false)
      let file = directory.file("c.json")
      let run = try CLI.start(["stress", "--processes", "2", "--duration", "60", "--relaxed", file], environment: CLI.environment(["TMPDIR": samples]))
      func sampleFiles() -> [String] {
        let runs = (try? FileManager.default.contentsOfDirectory(atPath: samples)) ?? []
        return runs.flatMap { (try? FileManager.default.contentsOfDirectory(atPath: samples + "/" + $0)) ?? [] }
      }
      #expect(waitUntil(deadline: .seconds(20)) { sampleFiles().count == 2 }, "the workers did not start")
      #expect(Self.runners(of: file).count == 2)
      kill(run.process.processIdentifier, SIGTERM)
      let outcome = run.wait(deadline: .seconds(20))
      #expect(outcome.signaled && outcome.status == SIGTERM && !outcome.timedOut, "\(outcome.summary)")
      #expect(try FileManager.default.contentsOfDirectory(atPath: samples).isEmpty)
      #expect(Self.runners(of: file).isEmpty, "workers left running")
    }
  }

  /// The scripts' worker keeps its interface.
  @Test func theOldWorkerStillWorks() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("c.json")
      let outcome = try CLI.run(["stress-worker", file, "counter", "5"])
      #expect(outcome.status == 0 && outcome.standardOutput == "", "\(outcome.summary)")
      #expect(try CLI.run(["get", file, "counter"]).standardOutput == "5\n")
    }
  }

  /// The processes running `ccsync stress-runner ... FILE` (from /proc/PID/cmdline).
  private static func runners(of file: String) -> [String] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.filter { Int32($0) != nil }.filter { pid in
      guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
      let arguments = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
      return arguments.contains("stress-runner") && arguments.contains(file)
    }
  }

  private static func object(_ text: String) throws -> [String: Any] {
    try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not a JSON object: \(text)")
  }
}

/// What the SVG test looks for while XMLParser reads the plot.
private final class SVGElements: NSObject, XMLParserDelegate {
  var root: String?
  var ids: Set<String> = []
  var bucketBars = 0
  var polylines = 0

  func parser(
    _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
    attributes: [String: String] = [:]
  ) {
    if root == nil { root = elementName }
    if let id = attributes["id"] { ids.insert(id) }
    if elementName == "rect" && attributes["class"] == "bucket" { bucketBars += 1 }
    if elementName == "polyline" { polylines += 1 }
  }
}
