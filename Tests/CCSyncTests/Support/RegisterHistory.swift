import Foundation
import Testing

/// The history of an etcd key used as a register (`{"register": N}`) by `ccsync` commands run
/// in lab hosts: each `ccsync set` and `ccsync get` is one operation, invoked when its process
/// starts and returned when it exits, on the system's monotonic clock, with its outcome
/// (``RegisterOperation``) for the linearizability checker. A write that exits 69 or 75
/// (no member answered, or the outcome could not be learned) is recorded as unknown: the
/// checker then lets it take effect at any later time or never. A read that fails is left
/// out of the check but counted.
///
/// `@unchecked Sendable`: the operations and exits are guarded by a lock.
final class RegisterHistory: @unchecked Sendable {
  /// One command's exit, kept for the test's own expectations.
  struct Exit: Sendable {
    var process: Int
    var isWrite: Bool
    var outcome: ChildProcess.Outcome
    var seconds: Double
  }

  private let lock = NSLock()
  private var operations: [RegisterOperation] = []
  private var exits: [Exit] = []
  let lab: NetworkLab
  let ccsync: String

  init(lab: NetworkLab) throws {
    self.lab = lab
    ccsync = try ChildProcess.builtExecutable("ccsync")
  }

  /// Every operation recorded so far.
  var history: [RegisterOperation] { lock.withLock { operations } }
  /// Every command's exit so far.
  var commands: [Exit] { lock.withLock { exits } }

  /// `ccsync set URL register VALUE` in `host`, recorded as process `process`'s write.
  @discardableResult
  func write(_ value: Int, to url: String, from host: NetworkLab.Host, process: Int) throws -> ChildProcess.Outcome {
    try record(host, ["set", url, "register", String(value)], process: process) { outcome in
      switch outcome.status {
      case 0 where !outcome.signaled: .ok()
      default: .unknown
      }
    } call: { .write(value) }
  }

  /// `ccsync get URL register` in `host`, recorded as process `process`'s read.
  @discardableResult
  func read(_ url: String, from host: NetworkLab.Host, process: Int) throws -> ChildProcess.Outcome {
    try record(host, ["get", url, "register"], process: process) { outcome in
      let text = outcome.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
      guard outcome.succeeded, let value = Int(text) else { return .fail }
      return .ok(read: value)
    } call: { .read }
  }

  /// The value a successful read returned, or `nil`.
  static func value(of outcome: ChildProcess.Outcome) -> Int? {
    outcome.succeeded ? Int(outcome.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)) : nil
  }

  /// Checks the history; `label` names the scenario in the failure message and the report.
  func expectLinearizable(_ label: String, sourceLocation: SourceLocation = #_sourceLocation) {
    let history = self.history
    let clock = ContinuousClock()
    let start = clock.now
    let result = checkLinearizability(history, initialValue: 0)
    #expect(result.isLinearizable, """
      \(label): not linearizable; longest order: \(result.longestPrefix.suffix(6)); blocked: \(result.blocked.prefix(8))
      """, sourceLocation: sourceLocation)
    FaultTools.report("\(label).operations", history.count)
    FaultTools.report("\(label).unknown", history.filter { $0.outcome == .unknown }.count)
    FaultTools.report("\(label).check", "\(clock.now - start) \(result.statesExplored) states")
  }

  private func record(
    _ host: NetworkLab.Host, _ arguments: [String], process: Int, outcome judge: (ChildProcess.Outcome) -> RegisterOperation.Outcome,
    call: () -> RegisterOperation.Call
  ) throws -> ChildProcess.Outcome {
    let invoked = FaultLinearizabilityTests.monotonicNow()
    // ccsync's own deadline is 5 s a call: 60 s is a hang, recorded as one.
    let outcome = try lab.run(in: host, ccsync, arguments, deadline: .seconds(60))
    let returned = FaultLinearizabilityTests.monotonicNow()
    let operation = RegisterOperation(process: process, call: call(), outcome: judge(outcome), invoked: invoked, returned: returned)
    let isWrite = if case .write = operation.call { true } else { false }
    lock.withLock {
      operations.append(operation)
      exits.append(Exit(process: process, isWrite: isWrite, outcome: outcome, seconds: Double(returned - invoked) / 1e9))
    }
    return outcome
  }
}
