import CCSync
import CCSyncProcesses

/// `ccsync stress [--processes N] [--iterations M] [--path PATH] FILE`: N copies of this
/// executable (`ccsync stress-worker FILE PATH M`) each make M exact read-modify-write
/// increments through the library (`SharedDocument.update`); then the integer must have grown
/// by exactly N x M.
enum StressCommand: Command {
  static let processes = OptionSpec(nil, "processes", value: "n", .integer(1...1024), help: "Number of processes (default 4).")
  static let iterations = OptionSpec(nil, "iterations", value: "m", .integer(0...100_000_000), help: "Increments per process (default 250).")
  static let path = OptionSpec(nil, "path", value: "path", help: "The integer to increment (default counter).")

  static let spec = CommandSpec(
    name: "stress", overview: "Lock-contention test: processes incrementing one integer, then a check that no update was lost.",
    operands: [Help.fileOperand],
    options: [processes, iterations, path],
    discussion: "Each process does <m> exact read-modify-write increments through the library. Exits 0 when the integer grew by exactly <n> x <m>, 1 otherwise.")

  /// What one run measured.
  struct Report {
    var processes: Int
    var iterations: Int
    var elapsed: Duration
    var before: Int64
    var after: Int64

    var lostUpdates: Int64 { Int64(processes * iterations) - (after - before) }

    var lines: [String] {
      let updates = Double(processes * iterations)
      let seconds = seconds(elapsed)
      return [
        "processes: \(processes)",
        "iterations: \(iterations)",
        "seconds: \(decimal(seconds, places: 3))",
        "updates per second: \(seconds > 0 ? String(Int((updates / seconds).rounded())) : "-")",
        "lost updates: \(lostUpdates)",
      ]
    }
  }

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let processes = arguments.integer(processes) ?? 4
    let iterations = arguments.integer(iterations) ?? 250
    let pathText = arguments.text(path) ?? "counter"
    let path = try parsePath(pathText, in: spec)
    let address = try arguments.address()
    let file = address.name
    let report = try stress(operand: arguments.operands[0], address: address, pathText: pathText, path: path, processes: processes, iterations: iterations)
    StandardStreams.write(report.lines.map { $0 + "\n" }.joined())
    if report.lostUpdates != 0 {
      throw CommandFailure(ExitCode.failure, "'\(pathText)' in '\(file)' grew by \(report.after - report.before), not \(processes * iterations)")
    }
    return ExitCode.success
  }

  /// Runs the workers and measures.
  /// - Parameters:
  ///   - operand: FILE as given, passed on to the workers.
  ///   - address: what it names: the workers update a file under its lock, or an etcd key by
  ///     compare-and-swap.
  /// - Throws: a ``CommandFailure`` when the value is not an integer or a worker failed.
  static func stress(
    operand: String, address: DocumentAddress, pathText: String, path: JSONPath, processes: Int, iterations: Int
  ) throws -> Report {
    let before = try counter(in: address, at: path, pathText: pathText)
    let start = ContinuousClock.now
    var workers: [Subprocess] = []
    for _ in 0..<processes {
      do {
        workers.append(try Subprocess.start(
          [ThisProcess.executablePath, "stress-worker", "--", operand, pathText, String(iterations)]))
      } catch {
        for worker in workers { try? worker.send(.kill); _ = worker.waitForStatus() }
        throw CommandFailure(ExitCode.ioError, error.description)
      }
    }
    var failed: Int32 = 0
    for worker in workers {
      let status = worker.waitForStatus()
      if status != 0 && failed == 0 { failed = status }
    }
    let elapsed = ContinuousClock.now - start
    let after = try counter(in: address, at: path, pathText: pathText)
    if failed != 0 {
      throw CommandFailure(failed, "a stress worker failed with status \(failed); '\(pathText)' went from \(before) to \(after)")
    }
    return Report(processes: processes, iterations: iterations, elapsed: elapsed, before: before, after: after)
  }

  /// The integer at `path` (0 when the file or the value does not exist yet).
  private static func counter(in address: DocumentAddress, at path: JSONPath, pathText: String) throws -> Int64 {
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
