import Foundation
import Testing
import CCSyncJSON

/// Hosts each running the helper's `increment-log URL HOST COUNT` on one etcd key, and what
/// their logs and the key say afterwards: every increment acknowledged (`ok N`) or settled
/// as applied must be in the key exactly once, none settled as not applied may be, and the
/// counter must be their number.
///
/// `Sendable`: immutable after ``start(in:hosts:url:count:)``; the children are thread-safe.
struct IncrementHosts: Sendable {
  /// One host's name and its helper.
  var workers: [(host: NetworkLab.Host, child: ChildProcess)]

  /// Starts one helper in each of `hosts`, each doing `count` increments of `url`'s key.
  static func start(in lab: NetworkLab, hosts: [NetworkLab.Host], url: String, count: Int) throws -> IncrementHosts {
    let helper = try testHelper()
    return IncrementHosts(workers: try hosts.map { host in
      (host, try lab.start(in: host, helper, ["increment-log", url, host.name, String(count)]))
    })
  }

  /// Increments acknowledged so far, all hosts together.
  var acknowledged: Int {
    workers.reduce(0) { $0 + $1.child.standardOutput.components(separatedBy: "\nok ").count - 1 }
  }

  /// Waits until every helper has exited (each is killed at the deadline) and returns their
  /// outcomes.
  func wait(deadline: Duration) -> [ChildProcess.Outcome] {
    let end = ContinuousClock.now + deadline
    return workers.map { $0.child.wait(deadline: max(.zero, end - ContinuousClock.now)) }
  }

  /// Checks the key's final document (`text`) against the helpers' logs and reports the
  /// figures under `label`.
  func expectExactlyOnce(_ label: String, document text: String, outcomes: [ChildProcess.Outcome]) throws {
    let document = try JSONValue(parsing: text)
    let applied = document.objectValue?["applied"]?.objectValue
    var total = 0
    var counts = (acknowledged: 0, settledApplied: 0, settledNotApplied: 0, errors: 0, settledInside: 0)
    for ((host, _), outcome) in zip(workers, outcomes) {
      #expect(outcome.succeeded, "\(host.name): \(outcome.summary)")
      let numbers = (applied?[host.name]?.arrayValue ?? []).compactMap { $0.numberValue?.int64Value.map(Int.init) }
      total += numbers.count
      var expected = Set<Int>()
      for line in outcome.standardOutput.split(separator: "\n") {
        let words = line.split(separator: " ")
        guard words.count >= 2, let number = Int(words[1]) else { continue }
        switch (words[0], words.count > 2 ? words[2] : "") {
        case ("ok", _): expected.insert(number); counts.acknowledged += 1
        case ("settled", "applied"): expected.insert(number); counts.settledApplied += 1
        case ("settled", "not-applied"): counts.settledNotApplied += 1
        case ("error", _): counts.errors += 1
        default: break
        }
      }
      // Writes whose answer was lost, settled inside the library (EtcdStore's stamps) and
      // logged as warnings: the faults the test meant to cause.
      counts.settledInside += outcome.standardError.components(separatedBy: "settled: ").count - 1
      #expect(numbers.count == Set(numbers).count, "\(label): \(host.name) has an increment applied twice: \(numbers)")
      #expect(Set(numbers) == expected, """
        \(label): \(host.name): in the key but never acknowledged or settled: \(Set(numbers).subtracting(expected).sorted()); \
        acknowledged or settled applied but not in the key: \(expected.subtracting(numbers).sorted())
        """)
    }
    let counter = document.objectValue?["counter"]?.numberValue?.int64Value.map(Int.init)
    #expect(counter == total, "\(label): counter \(counter.map(String.init) ?? "none") for \(total) increments applied")
    #expect(counter == counts.acknowledged + counts.settledApplied)
    FaultTools.report("\(label).acknowledged", counts.acknowledged)
    FaultTools.report("\(label).errors", counts.errors)
    FaultTools.report("\(label).settled-in-library", counts.settledInside)
    FaultTools.report("\(label).settled-applied", counts.settledApplied)
    FaultTools.report("\(label).settled-not-applied", counts.settledNotApplied)
  }
}
