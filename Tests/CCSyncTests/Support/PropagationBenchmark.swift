import Foundation
import Synchronization
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// What the helper's `timed-saves` writes: a sequence number, the writer's `CLOCK_MONOTONIC`
/// reading just before the save (one clock for every process on the machine), and a payload
/// that sets the document's size. Mirrors `TimedDocument` in the helper's ReloadHelper.swift.
struct TimedDocument: Codable, Sendable, Equatable {
  var sequence = -1
  var sentAt: Int64 = 0
  var payload = ""
}

/// Propagation delays from one run: for every change the observer heard, its receive time
/// minus the writer's stamp.
struct PropagationDelays: Sendable, CustomStringConvertible {
  var delays: [Int64]
  var sent: Int

  /// The `fraction` quantile (nearest rank) in milliseconds; `.nan` with no samples.
  func percentile(_ fraction: Double) -> Double {
    guard !delays.isEmpty else { return .nan }
    let sorted = delays.sorted()
    let rank = min(sorted.count - 1, max(0, Int((fraction * Double(sorted.count)).rounded(.up)) - 1))
    return Double(sorted[rank]) / 1e6
  }

  var description: String {
    let worst = delays.max().map { Double($0) / 1e6 } ?? .nan
    return String(format: "received=%d/%d p50=%.2f ms p99=%.2f ms max=%.2f ms",
                  delays.count, sent, percentile(0.5), percentile(0.99), worst)
  }
}

/// The live-reload propagation benchmark, reusable: a helper child (`timed-saves`) saves a
/// `TimedDocument` of about `bytes` `saves` times, `interval` apart, through a
/// `CodableStorage`; this process holds another `CodableStorage` on the file and records, for
/// each external change its observer hears, the delay since the writer's stamp. A steady
/// writer, not a flood: a flood measures queueing, and coalesced versions are not heard.
/// - Returns: the delays, or `nil` when the last save was not heard within 10 s.
func measurePropagation(
  in directory: String, bytes: Int, saves: Int = 200, interval: Duration = .milliseconds(5)
) throws -> PropagationDelays? {
  let path = directory + "/timed-\(bytes).json"
  let storage = CodableStorage(defaultValue: TimedDocument(), path: path, updateMode: .manual, options: watchingOptions)
  let delays = Protected<[Int64]>([])
  let lastSequence = Atomic<Int>(-1)
  let observation = storage.observe { change in
    let received = FileSystem.monotonicNanoseconds()
    guard change.origin == .external else { return }
    delays.withLock { $0.append(received - change.value.sentAt) }
    lastSequence.store(change.value.sequence, ordering: .releasing)
  }
  defer { observation.cancel() }
  let milliseconds = Int(interval.components.seconds * 1000 + interval.components.attoseconds / 1_000_000_000_000_000)
  let writer = try InteractiveChild(try testHelper(), ["timed-saves", path, "\(saves)", "\(bytes)", "\(milliseconds)"])
  guard writer.nextLine(startingWith: "ready") != nil else { return nil }
  writer.send("go")
  guard writer.nextLine(startingWith: "done", deadline: .seconds(120)) != nil,
        waitUntil(deadline: .seconds(10), { lastSequence.load(ordering: .acquiring) == saves - 1 }) else { return nil }
  _ = writer.finish()
  return PropagationDelays(delays: delays.withLock { $0 }, sent: saves)
}
