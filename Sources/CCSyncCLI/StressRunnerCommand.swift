import CCSync
import CCSyncProcesses

/// `ccsync stress-runner [OPTIONS] FILE PATH`: one process of `ccsync stress`'s richer
/// workloads (`stress-worker` stays as scripts know it). It runs `--threads` threads, each
/// doing its operations and writing one ``StressSample`` per operation to its own file in
/// `--samples`, which the parent reads.
enum StressRunnerCommand: Command {
  static let process = OptionSpec(nil, "process", value: "index", .integer(0...Int.max), help: "This process's number in the run.")
  static let threads = OptionSpec(nil, "threads", value: "t", .integer(1...1024), help: "Threads.")
  static let iterations = OptionSpec(nil, "iterations", value: "m", .integer(1...Int.max), help: "Operations per thread.")
  static let until = OptionSpec(nil, "until", value: "stamp", .integer(0...Int.max), help: "CLOCK_MONOTONIC nanoseconds after which no operation starts.")
  static let hold = OptionSpec(nil, "hold", value: "secs", .seconds(positive: false), help: "Time inside the lock.")
  static let shared = OptionSpec(nil, "shared", value: "r", .number(0...1), help: "Fraction of readers.")
  static let mode = OptionSpec(nil, "mode", value: "mode", .choice(["update", "lock"]), help: "update or lock.")
  static let relaxed = OptionSpec(nil, "relaxed", help: "No fsync.")
  static let seed = OptionSpec(nil, "seed", value: "n", .integer(0...Int.max), help: "Random seed.")
  static let samples = OptionSpec(nil, "samples", value: "dir", .file, help: "Where the samples files go.")

  static let spec = CommandSpec(
    name: "stress-runner", overview: "One process of 'ccsync stress' with threads and samples (internal).",
    operands: [Help.fileOperand, OperandSpec("path", help: "The integer.")],
    options: [process, threads, iterations, until, hold, shared, mode, relaxed, seed, samples],
    exclusive: [[iterations, until]], isHidden: true)

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let address = try arguments.address()
    let pathText = arguments.operands[1]
    let path = try parsePath(pathText, in: spec)
    guard let directory = arguments.text(samples) else { throw arguments.usageError("Missing expected option '--samples <dir>'") }
    var workload = StressWorkload()
    workload.mode = StressWorkload.Mode(rawValue: arguments.text(mode) ?? "update") ?? .update
    workload.threads = arguments.integer(threads) ?? 1
    workload.length = arguments.integer(until).map { .until(Int64($0)) } ?? .iterations(arguments.integer(iterations) ?? 1)
    workload.hold = arguments.seconds(hold) ?? .zero
    workload.shared = arguments.number(shared) ?? 0
    workload.relaxed = arguments.has(relaxed)
    workload.seed = UInt64(arguments.integer(seed) ?? 1)
    let processIndex = arguments.integer(process) ?? 0

    let configured = workload
    let target = StressTarget(address: address, path: path, pathText: pathText, relaxed: workload.relaxed)
    let failure = Protected<(any Error)?>(nil)
    var threadsStarted: [BackgroundThread] = []
    for thread in 0..<workload.threads {
      let sink = try StressSampleSink(path: directory + "/" + StressSample.fileName(process: processIndex, thread: thread))
      let seed = workload.seed &+ UInt64(processIndex) &* 1_000_003 &+ UInt64(thread) &* 7_919
      let body: @Sendable () -> Void = {
        do {
          try StressRunnerCommand.work(configured, target: target, sink: sink, seed: seed, failure: failure)
        } catch {
          failure.withLock { if $0 == nil { $0 = error } }
        }
      }
      threadsStarted.append(try BackgroundThread(name: "ccsync-stress", body: body))
    }
    for thread in threadsStarted { thread.join() }
    if let error = failure.withLock({ $0 }) { throw error }
    return ExitCode.success
  }

  /// One thread's loop: its operations, each measured, until its iterations are done or the
  /// time is up (or another thread failed).
  private static func work(
    _ workload: StressWorkload, target: StressTarget, sink: StressSampleSink, seed: UInt64,
    failure: Protected<(any Error)?>
  ) throws {
    var random = SplitMix64(seed: seed)
    var iteration: Int64 = 0
    // One client per thread for etcd's lock, kept for all its operations: a connection made
    // per operation would be measured as waiting.
    var locker: EtcdLocker?
    if workload.mode == .lock, case .etcd(let location) = target.address {
      locker = try EtcdLocker(location: location)
    }
    defer { try? sink.flush() }
    while true {
      switch workload.length {
      case .iterations(let count): if iteration >= count { return }
      case .until(let stamp): if MachineStamp.now() >= stamp { return }
      }
      if iteration % 64 == 0, failure.withLock({ $0 != nil }) { return }
      let reader = workload.shared > 0 && Double(random.next() >> 11) / Double(1 << 53) < workload.shared
      let sample: StressSample
      switch workload.mode {
      case .update:
        sample = reader ? try target.read(iteration: iteration, hold: workload.hold) : try target.increment(iteration: iteration, hold: workload.hold)
      case .lock:
        sample = try target.lock(exclusive: !reader, iteration: iteration, hold: workload.hold, locker: locker)
      }
      try sink.add(sample)
      iteration += 1
    }
  }
}
