import Foundation
import Testing

/// The file as a compare-and-swap register shared by processes: five processes read it,
/// replace it and compare-and-swap it through `SharedDocument` (the helper's `register-ops`),
/// two of them killed part way, and the history they printed (call and return times on the
/// system's monotonic clock) must be linearizable (Support/Linearizability.swift). An
/// operation whose process was killed before it printed its return has an unknown outcome.
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

  /// The operations in a `register-ops` process's output: each `invoke` line with its
  /// `return` line, or with an unknown outcome when none followed.
  static func operations(of process: Int, from output: String) throws -> [RegisterOperation] {
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
    return operations + pending.values
  }
}
