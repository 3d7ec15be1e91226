import Foundation
import Testing
import CCSyncJSON

/// The file as a compare-and-swap register shared by processes: processes read it, replace
/// it and compare-and-swap it through `SharedDocument` (the helper's `register-ops`), and the
/// history they printed (call and return times on the system's monotonic clock) must be
/// linearizable (Support/Linearizability.swift): with processes killed part way (an
/// operation whose process was killed before it printed its return has an unknown outcome),
/// and across power cuts on `scripts/powercut-fs` (one in flight at a cut was cut short: it
/// took effect before the cut or never).
@Suite(.serialized) struct FaultLinearizabilityTests {
  @Test func processesUsingTheFileAsARegisterGiveALinearizableHistory() throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    do {
      let path = directory.file("register.json")
      writeFile(path, "{\"register\": 0}\n")
      let seed = ProcessInfo.processInfo.environment["CCSYNC_FAULT_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...1_000_000)
      var random = SeededJSONRandom(seed: seed)
      let children = try (1...5).map { process in
        try ChildProcess.start(testHelper(), ["register-ops", path, String(process), "80", String(seed &+ UInt64(process))])
      }
      for child in children {
        #expect(waitUntil(deadline: .seconds(20)) { child.standardOutput.contains("ready") || !child.isRunning })
      }
      // Two are killed once they are well into their operations.
      for child in children.prefix(2) {
        let calls = Int.random(in: 10...60, using: &random)
        _ = waitUntil(deadline: .seconds(20)) { child.standardOutput.components(separatedBy: "invoke ").count > calls || !child.isRunning }
        kill(child.process.processIdentifier, SIGKILL)
      }
      var history: [RegisterOperation] = []
      for (index, child) in children.enumerated() {
        let outcome = child.wait(deadline: .seconds(120))
        if index >= 2 { #expect(outcome.succeeded, "process \(index + 1): \(outcome.summary)") }
        history += try Self.operations(of: index + 1, from: outcome.standardOutput)
      }
      let clock = ContinuousClock()
      let start = clock.now
      let result = checkLinearizability(history, initialValue: 0)
      let took = clock.now - start
      #expect(result.isLinearizable, """
        seed \(seed): not linearizable; longest order: \(result.longestPrefix.suffix(5)); blocked: \(result.blocked.prefix(8))
        """)
      let unknown = history.filter { $0.outcome == .unknown }.count
      FaultTools.report("register-history.operations", history.count)
      FaultTools.report("register-history.unknown", unknown)
      FaultTools.report("register-history.failed-cas", history.filter { $0.outcome == .fail }.count)
      FaultTools.report("register-history.check", "\(took) \(result.statesExplored) states")
      FaultTools.report("register-history.concurrency", LinearizabilityCheckerTests.maximumConcurrency(history))
      #expect(history.count >= 250)
    }
  }

  /// Rounds of four processes on a `scripts/powercut-fs` mount, each round ended by a power
  /// cut armed at a random one of their next 200 changes (in a random order): every
  /// operation acknowledged before a cut survives it, and the register's history across all
  /// rounds, ending with a read after the last cut, is linearizable. Reads are durable
  /// (`--durable-reads`: an `update { }` that changes nothing makes what it read durable
  /// before it returns, under the lock). A plain `read()` takes no lock and may return a
  /// version whose directory `fsync` has not ended, which a cut can undo (docs/SEMANTICS.md),
  /// so a history with plain reads need not be linearizable across cuts.
  @Test func registerHistoryAcrossPowerCutsIsLinearizable() throws {
    let fileSystem = try PowerCutFileSystem()
    let path = fileSystem.file("register.json")
    try Data("{\"register\": 0}\n".utf8).write(to: URL(fileURLWithPath: path))
    try fileSystem.sync()
    let seed = ProcessInfo.processInfo.environment["CCSYNC_FAULT_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...1_000_000)
    var random = SeededJSONRandom(seed: seed)
    var history: [RegisterOperation] = []
    var armedCuts = 0
    for round in 0..<8 {
      let order = random.pick(PowerCutFileSystem.Order.allCases)
      try fileSystem.arm(after: Int.random(in: 1...200, using: &random), order)
      let children = try (1...4).map { index in
        try ChildProcess.start(testHelper(), [
          "register-ops", path, String(round * 10 + index), "40", String(seed &+ UInt64(round * 10 + index)), "--durable-reads",
        ])
      }
      waitUntil(deadline: .seconds(60)) { fileSystem.armedCutHappened(within: .zero) || children.allSatisfy { !$0.isRunning } }
      let cutAt = Self.monotonicNow()
      for child in children { kill(child.process.processIdentifier, SIGKILL) }
      let outputs = children.map { $0.wait().standardOutput }
      if fileSystem.armedCut() != nil {
        armedCuts += 1
        try fileSystem.powerOn()
      } else {
        try fileSystem.cut(order)
      }
      for (index, output) in outputs.enumerated() {
        history += try Self.operations(of: round * 10 + index + 1, from: output, cutShortAt: cutAt)
      }
    }
    let invoked = Self.monotonicNow()
    let final = try JSONValue(parsing: [UInt8](try #require(FileManager.default.contents(atPath: path))))
    let value = try #require(final.objectValue?["register"]?.numberValue?.int64Value)
    history.append(.read(Int(value), process: 0, invoked, Self.monotonicNow()))
    let clock = ContinuousClock()
    let start = clock.now
    let result = checkLinearizability(history, initialValue: 0)
    let took = clock.now - start
    #expect(result.isLinearizable, """
      seed \(seed): not linearizable; longest order: \(result.longestPrefix.suffix(6)); blocked: \(result.blocked.prefix(8))
      """)
    FaultTools.report("register-across-cuts.operations", history.count)
    FaultTools.report("register-across-cuts.cut-short", history.filter { $0.outcome == .cutShort }.count)
    FaultTools.report("register-across-cuts.armed-cuts", armedCuts)
    FaultTools.report("register-across-cuts.check", "\(took) \(result.statesExplored) states")
    #expect(armedCuts >= 4, "most rounds should end in the armed cut")
  }

  /// The system's monotonic clock in nanoseconds, the helper's clock for its lines.
  static func monotonicNow() -> Int64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
  }

  /// The operations in a `register-ops` process's output: each `invoke` line with its
  /// `return` line, or, when none followed, with an unknown outcome, or cut short at
  /// `cutShortAt` when the process died in a power cut then.
  static func operations(of process: Int, from output: String, cutShortAt: Int64? = nil) throws -> [RegisterOperation] {
    var pending: [Int: RegisterOperation] = [:]
    var operations: [RegisterOperation] = []
    for line in output.split(separator: "\n") {
      let words = line.split(separator: " ").map(String.init)
      guard words.count >= 3, let id = Int(words[1]), let time = Int64(words.last!) else { continue }
      if words[0] == "invoke" {
        let call: RegisterOperation.Call
        switch words[2] {
        case "read": call = .read
        case "write": call = .write(try #require(Int(words[3])))
        default: call = .compareAndSwap(expected: try #require(Int(words[3])), new: try #require(Int(words[4])))
        }
        pending[id] = RegisterOperation(process: process, call: call, outcome: .unknown, invoked: time, returned: time)
      } else if words[0] == "return", var operation = pending.removeValue(forKey: id) {
        operation.returned = time
        switch (words[2], operation.call) {
        case ("ok", .read): operation.outcome = .ok(read: Int(words[3]))
        case ("ok", _): operation.outcome = .ok()
        default: operation.outcome = .fail
        }
        operations.append(operation)
      }
    }
    return operations + pending.values.map { operation in
      guard let cutShortAt else { return operation }
      var cut = operation
      cut.outcome = .cutShort
      cut.returned = max(cutShortAt, operation.invoked)
      return cut
    }
  }
}
