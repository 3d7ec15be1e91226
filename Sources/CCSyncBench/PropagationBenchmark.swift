import CCSync
import Foundation
import Synchronization

/// `ccsync-bench propagation-reader FILE`: the receiving end of the propagation benchmark. It
/// holds a `CodableStorage<TimedDocument>` on FILE (as an application would: watched, decoded
/// into its type) and records, for every change another process makes, the sequence number
/// of the decoded value and `CLOCK_MONOTONIC` when the observer heard it. It prints `ready`
/// once its watch is armed; when the driver closes its standard input it prints one
/// `SEQUENCE RECEIVED_NS` line per change heard, then `end`.
///
/// The writer (`floor timed-writer`, the C floor's protocol) records when it renamed each
/// version, so the driver's difference is rename-to-decoded-value, the same interval the C
/// inotify reader (`bench/peers/inotify_floor.c`) is measured over.
enum PropagationBenchmark {
  static let usage = "USAGE: ccsync-bench propagation-reader FILE"

  /// What the writer saves: mirrors `TimedDocument` in the test helper.
  struct TimedDocument: Codable, Sendable {
    var sequence = -1
    var sentAt: Int64 = 0
    var payload = ""
  }

  static func run(arguments: [String]) {
    guard arguments.count == 1 else { BenchmarkProcess.fail(usage, code: 64) }
    let storage = CodableStorage(
      defaultValue: TimedDocument(), path: arguments[0], updateMode: .manual,
      options: StorageOptions(flushesAtExit: false))
    let received = Mutex<[(sequence: Int, at: Int64)]>([])
    received.withLock { $0.reserveCapacity(10_000) }
    let observation = storage.observe { change in
      let now = BenchmarkProcess.monotonicNanoseconds()
      guard change.origin == .external else { return }
      received.withLock { $0.append((change.value.sequence, now)) }
    }
    BenchmarkProcess.say("ready")
    while readLine() != nil {}
    observation.cancel()
    var lines = ""
    for sample in received.withLock({ $0 }) { lines += "\(sample.sequence) \(sample.at)\n" }
    BenchmarkProcess.say(lines + "end")
  }
}
