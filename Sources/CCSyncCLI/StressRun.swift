import CCSync
import CCSyncProcesses

/// One run of `ccsync stress`: starts the worker processes, follows their samples (drawing a
/// live status line when standard error is a terminal), waits for them and makes the report.
struct StressRun {
  var operand: String
  var address: DocumentAddress
  var pathText: String
  var path: JSONPath
  var processes: Int
  var workload: StressWorkload
  var duration: Duration?

  /// Runs the workers and measures.
  /// - Throws: a ``CommandFailure``: 65 when the value is not an integer (nothing written), a
  ///   worker's status when one failed, 74 when one cannot be started.
  func execute(maxP99: Duration?, minFairness: Double?) throws -> StressReport {
    let before = workload.mode == .update ? try StressCommand.counter(in: address, at: path, pathText: pathText) : nil
    let directory: String
    do {
      directory = try FileTree.makeTemporaryDirectory(prefix: "ccsync-stress")
    } catch {
      throw CommandFailure(ExitCode.cannotCreate, error.description)
    }
    defer { try? FileTree.removeTree(directory) }

    var workload = self.workload
    let start = MachineStamp.now()
    if let duration { workload.length = .until(start + duration.nanoseconds) }
    var readers: [StressSampleReader] = []
    var workers: [Subprocess] = []
    for process in 0..<processes {
      for thread in 0..<workload.threads {
        readers.append(StressSampleReader(
          path: directory + "/" + StressSample.fileName(process: process, thread: thread), process: process, thread: thread))
      }
      do {
        workers.append(try Subprocess.start(
          [ThisProcess.executablePath, "stress-runner"] + workload.runnerArguments(process: process, samples: directory)
            + ["--", operand, pathText]))
      } catch {
        for worker in workers { try? worker.send(.kill); _ = worker.waitForStatus() }
        throw CommandFailure(ExitCode.ioError, error.description)
      }
    }
    let statuses = follow(workers, readers: readers, start: start, live: ThisProcess.standardErrorIsTerminal, directory: directory)
    let elapsed = MachineStamp.now() - start
    do {
      for reader in readers { try reader.readNew() }
    } catch {
      throw CommandFailure(ExitCode.ioError, "cannot read the workers' samples: \(error.description)")
    }
    let after = workload.mode == .update ? try StressCommand.counter(in: address, at: path, pathText: pathText) : nil
    if let failed = statuses.first(where: { $0 != 0 }) {
      let change = before.map { "; '\(pathText)' went from \($0) to \(after ?? $0)" } ?? ""
      throw CommandFailure(failed, "a stress worker failed with status \(failed)\(change)")
    }
    let counter = before.map { StressReport.Counter(pathText: pathText, before: $0, after: after ?? $0) }
    return StressReport(
      samples: readers.map(\.samples), processes: processes, threads: workload.threads, workload: workload,
      overEtcd: !address.isFile, duration: duration, start: start, elapsed: elapsed, counter: counter, maxP99: maxP99,
      minFairness: minFairness)
  }

  /// Waits for the workers. With `live`, reads their samples as they come and redraws one
  /// status line on standard error twice a second: elapsed time, operations, the rate over the
  /// last half second and the p99 wait so far (the upper bound of its histogram bucket).
  /// SIGINT, SIGTERM or SIGHUP stop the workers, remove the samples and end this process by
  /// the signal.
  /// - Returns: each worker's status.
  private func follow(_ workers: [Subprocess], readers: [StressSampleReader], start: Int64, live: Bool, directory: String) -> [Int32] {
    // SIGCHLD too: the loop wakes as soon as a worker ends, so the elapsed time it reports
    // is not rounded up to the next 100 ms check.
    let signals = try? SignalPipe.install([.interrupt, .terminate, .hangUp, .childStatusChanged])
    var statuses: [Int32?] = workers.map { _ in nil }
    var counts = [Int](repeating: 0, count: StressStatistics.bucketBounds.count + 1)
    var operations = 0
    var lastOperations = 0
    var lastDraw = MachineStamp.now()
    let overEtcd = !address.isFile
    while statuses.contains(where: { $0 == nil }) {
      if let signals {
        _ = waitForInput([signals], timeout: .milliseconds(100))
        if let signal = signals.drain().first(where: { $0 != .childStatusChanged }) {
          if live { StandardStreams.write("\r\u{1B}[K", toStandardError: true) }
          for (index, worker) in workers.enumerated() where statuses[index] == nil { try? worker.send(.terminate) }
          for (index, worker) in workers.enumerated() where statuses[index] == nil { _ = worker.waitForStatus() }
          try? FileTree.removeTree(directory)
          signal.endProcess()
        }
      } else {
        ContinuousClock.sleepThread(for: .milliseconds(100))
      }
      for (index, worker) in workers.enumerated() where statuses[index] == nil {
        statuses[index] = worker.statusIfExited()
      }
      let now = MachineStamp.now()
      guard live, now - lastDraw >= 500_000_000 else { continue }
      for reader in readers {
        guard let new = try? reader.readNew() else { continue }
        for sample in new {
          let wait = overEtcd && sample.kind == .write ? sample.released - sample.requested : sample.acquired - sample.requested
          counts[StressStatistics.bucketIndex(of: wait)] += 1
        }
        operations += new.count
      }
      let rate = Double(operations - lastOperations) * 1e9 / Double(now - lastDraw)
      let p99 = StressStatistics.percentileBound(perMille: 990, counts: counts).map { "≤ " + StressStatistics.timeText($0) } ?? "-"
      StandardStreams.write(
        "\r\u{1B}[K\(decimal(Double(now - start) / 1e9, places: 1)) s  \(operations) operations  \(Int(rate.rounded()))/s  p99 wait \(p99)",
        toStandardError: true)
      lastDraw = now
      lastOperations = operations
    }
    if live { StandardStreams.write("\r\u{1B}[K", toStandardError: true) }
    return statuses.map { $0 ?? ExitCode.ioError }
  }
}
