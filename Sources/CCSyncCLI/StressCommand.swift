import CCSync
import CCSyncProcesses

/// `ccsync stress [OPTIONS] FILE`: the lock-contention test. N processes
/// (`ccsync stress-runner`, copies of this executable) of T threads each make exact
/// read-modify-write increments through the library (`SharedDocument.update`), or take the lock
/// alone (`--mode lock`), for M operations or SECS seconds; every operation is measured, and
/// the report gives the throughput, the wait for the lock and the time held at p50 to p99.9,
/// each worker's share, a histogram, and the exactness checks (docs/CLI.md, "stress").
enum StressCommand: Command {
  static let processes = OptionSpec(nil, "processes", value: "n", .integer(1...1024), help: "Number of processes (default 4).")
  static let threads = OptionSpec(nil, "threads", value: "t", .integer(1...256), help: "Threads per process, sharing one document: their writes are group-committed (default 1).")
  static let iterations = OptionSpec(nil, "iterations", value: "m", .integer(1...100_000_000), help: "Operations per thread (default 250).")
  static let duration = OptionSpec(nil, "duration", value: "secs", .seconds(positive: true), help: "Run for this long instead of a number of operations.")
  static let hold = OptionSpec(nil, "hold", value: "secs", .seconds(positive: false), help: "Time spent inside the lock per operation, as real work would (default 0).")
  static let shared = OptionSpec(nil, "shared", value: "r", .number(0...1), help: "Fraction of operations that are readers under the shared lock, 0 to 1 (default 0; files only).")
  static let mode = OptionSpec(nil, "mode", value: "mode", .choice(["update", "lock"]), help: "update: exact increments (default); lock: the lock alone, nothing written, holders checked for overlaps.")
  static let relaxed = OptionSpec(nil, "relaxed", help: "Write without fsync (atomic, not durable).")
  static let path = OptionSpec(nil, "path", value: "path", help: "The integer to increment (default counter).")
  static let json = OptionSpec(nil, "json", help: "Print every figure as one JSON object, with the per-second timeline.")
  static let plot = OptionSpec(nil, "plot", value: "file.svg", .file, help: "Draw the wait distribution and the rate over time as SVG.")
  static let maxP99 = OptionSpec(nil, "max-p99", value: "secs", .seconds(positive: true), help: "Exit 1 when the p99 wait is above this.")
  static let minFairness = OptionSpec(nil, "min-fairness", value: "f", .number(0...1), help: "Exit 1 when the lowest worker's share against the mean is below this.")

  static let spec = CommandSpec(
    name: "stress", overview: "Lock-contention test: workers incrementing one integer (or taking the lock), measured, then checked for lost updates.",
    operands: [Help.fileOperand],
    options: [processes, threads, iterations, duration, hold, shared, mode, relaxed, path, json, plot, maxP99, minFairness],
    exclusive: [[iterations, duration]],
    discussion: """
      Each of the <n> x <t> workers does <m> operations (or runs for --duration) and measures each one. \
      Prints the throughput, the wait for the lock and the time held (p50, p90, p99, p99.9, max), \
      each worker's share (lowest against the mean, Jain's index) and a histogram. \
      Exits 0 when no update was lost (and, with --mode lock, no two holders overlapped) and the \
      figures meet --max-p99 and --min-fairness; 1 otherwise; 65 when PATH is not an integer.
      """)

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let address = try arguments.address()
    var workload = StressWorkload()
    workload.mode = StressWorkload.Mode(rawValue: arguments.text(mode) ?? "update") ?? .update
    workload.threads = arguments.integer(threads) ?? 1
    workload.hold = arguments.seconds(hold) ?? .zero
    workload.shared = arguments.number(shared) ?? 0
    workload.relaxed = arguments.has(relaxed)
    workload.seed = UInt64.random(in: 1...UInt64(Int.max / 2))
    workload.length = .iterations(arguments.integer(iterations) ?? 250)
    if case .etcd = address, workload.shared > 0 {
      throw arguments.usageError("The option '--shared' cannot be used with an etcd key: etcd has no shared lock")
    }
    let processCount = arguments.integer(processes) ?? 4
    let pathText = arguments.text(path) ?? "counter"
    let path = try parsePath(pathText, in: spec)
    let run = StressRun(
      operand: arguments.operands[0], address: address, pathText: pathText, path: path, processes: processCount,
      workload: workload, duration: arguments.seconds(duration))
    let report = try run.execute(maxP99: arguments.seconds(maxP99), minFairness: arguments.number(minFairness))
    if arguments.has(json) {
      StandardStreams.writeLine(report.json.formatted(.compact))
    } else {
      StandardStreams.write(report.lines.map { $0 + "\n" }.joined())
    }
    if let plotFile = arguments.text(plot) {
      // A temp file beside it, renamed over it: a reader never sees half a plot.
      let temporary = plotFile + ".tmp-" + FileSystem.randomSuffix(length: 6)
      do {
        let file = try FileDescriptor.createNew(temporary, permissions: 0o644)
        try file.writeAll(Array(StressPlot.svg(report).utf8))
        try file.close()
        try FileSystem.rename(temporary, to: plotFile)
      } catch {
        try? FileTree.removeFile(temporary)
        throw CommandFailure(ExitCode.cannotCreate, "cannot write the plot '\(plotFile)': \(error.reason)")
      }
    }
    let file = address.name
    if report.lostUpdates != 0, let counter = report.counter {
      throw CommandFailure(
        ExitCode.failure, "'\(pathText)' in '\(file)' grew by \(counter.after &- counter.before), not \(report.writes): \(report.lostUpdates) lost updates")
    }
    if !report.mismatches.isEmpty {
      throw CommandFailure(
        ExitCode.failure, "\(report.mismatches.count) increments of '\(pathText)' in '\(file)' read a value the previous one did not write: a writer outside the lock")
    }
    if report.overlaps > 0 {
      throw CommandFailure(ExitCode.failure, "\(report.overlaps) holds of the lock on '\(file)' overlapped another holder's")
    }
    if !report.gateFailures.isEmpty {
      throw CommandFailure(ExitCode.failure, report.gateFailures.joined(separator: "; "))
    }
    return ExitCode.success
  }

  /// The integer at `path` (0 when the file or the value does not exist yet).
  /// - Throws: a ``CommandFailure`` (65) when it is not an integer.
  static func counter(in address: DocumentAddress, at path: JSONPath, pathText: String) throws -> Int64 {
    guard let document = try address.document().read(), let value = try document.value(at: path) else { return 0 }
    guard let number = value.numberValue?.int64Value else {
      throw CommandFailure(ExitCode.dataError, "'\(pathText)' in '\(address.name)' is not an integer: \(value.formatted(.compact))")
    }
    return number
  }
}

/// `ccsync stress-worker FILE PATH M`: M increments, each one `SharedDocument.update`; one
/// process of `ccsync stress`, and a tool scripts use on their own.
enum StressWorkerCommand: Command {
  static let spec = CommandSpec(
    name: "stress-worker", overview: "One process of 'ccsync stress' (internal).",
    operands: [Help.fileOperand, OperandSpec("path", help: "The integer."), OperandSpec("m", help: "Increments.")],
    options: [], isHidden: true)

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let address = try arguments.address()
    let file = address.name
    let pathText = arguments.operands[1]
    let path = try parsePath(pathText, in: spec)
    guard let iterations = Int(arguments.operands[2]), iterations >= 0 else {
      throw arguments.usageError("The value '\(arguments.operands[2])' is invalid for '<m>'")
    }
    let document = address.document()
    for _ in 0..<iterations {
      try document.update(invalidFile: .fail) { value in
        let current = try value.value(at: path)
        guard let number = current == nil ? 0 : current?.numberValue?.int64Value else {
          throw CommandFailure(ExitCode.dataError, "'\(pathText)' in '\(file)' is not an integer")
        }
        let (next, overflow) = number.addingReportingOverflow(1)
        if overflow { throw CommandFailure(ExitCode.dataError, "'\(pathText)' in '\(file)' is at the largest integer, \(number)") }
        try value.setValue(.number(JSONNumber(next)), at: path)
      }
    }
    return ExitCode.success
  }
}

/// `value` with `places` decimals, without Foundation's formatters.
func decimal(_ value: Double, places: Int) -> String {
  var scale = 1.0
  for _ in 0..<places { scale *= 10 }
  let scaled = Int64((value * scale).rounded())
  let whole = scaled / Int64(scale)
  let fraction = String(scaled % Int64(scale))
  guard places > 0 else { return String(whole) }
  return "\(whole)." + String(repeating: "0", count: places - fraction.count) + fraction
}

/// `duration` in seconds as a person writes it: `0.3`, `5`, `1.25` (to the millisecond).
func secondsText(_ duration: Duration) -> String {
  var text = decimal(seconds(duration), places: 3)
  while text.hasSuffix("0") { text.removeLast() }
  if text.hasSuffix(".") { text.removeLast() }
  return text
}
