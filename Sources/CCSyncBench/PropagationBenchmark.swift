import CCSync
import CCSyncProcesses
import CCSyncSystem
import Foundation

/// `ccsync-bench propagation-reader FILE [--layer storage|document|watcher]`: the receiving
/// end of the propagation benchmark. It records, for every change another process makes to
/// FILE, the sequence number of the version it got and `CLOCK_MONOTONIC` at that moment. It
/// prints `ready` once its watch is armed; when the driver closes its standard input it prints
/// one `SEQUENCE RECEIVED_NS` line per change heard, then `end`.
///
/// `--layer` picks how far up the library the version travels before it is stamped, so the
/// driver can tell where the time goes:
/// - `storage` (default), what an application sees: a `CodableStorage<TimedDocument>` observer
///   receives the decoded value;
/// - `document`: a `FileWatcher` handler calls `SharedDocument.readIfChanged` (identity check,
///   read, parse) and takes the sequence from the JSON tree;
/// - `watcher`: a `FileWatcher` handler reads the bytes and finds the sequence number in them
///   without parsing, as the C inotify floor does.
///
/// The writer (`floor timed-writer`, the C floor's protocol) records when it renamed each
/// version, so the driver's difference is rename-to-value, the interval the C inotify reader
/// (`bench/peers/inotify_floor.c`) is measured over.
enum PropagationBenchmark {
  static let usage = "USAGE: ccsync-bench propagation-reader FILE [--layer storage|document|watcher]"

  /// What the writer saves: mirrors `TimedDocument` in the test helper.
  struct TimedDocument: Codable, Sendable {
    var sequence = -1
    var sentAt: Int64 = 0
    var payload = ""
  }

  /// The versions heard: sequence numbers and when. `Sendable`: behind a `Protected`.
  final class Samples: Sendable {
    let list = Protected<[(sequence: Int, at: Int64)]>([])

    func append(_ sequence: Int, at time: Int64) {
      list.withLock { $0.append((sequence, time)) }
    }
  }

  static func run(arguments: [String]) {
    guard let path = arguments.first, !path.hasPrefix("-") else { BenchmarkProcess.fail(usage, code: 64) }
    let received = Samples()
    received.list.withLock { $0.reserveCapacity(10_000) }
    let stop: () -> Void
    switch BenchmarkProcess.option("--layer", in: arguments) ?? "storage" {
    case "storage": stop = observeStorage(path, into: received)
    case "document": stop = observeDocument(path, into: received)
    case "watcher": stop = observeWatcher(path, into: received)
    default: BenchmarkProcess.fail(usage, code: 64)
    }
    BenchmarkProcess.say("ready")
    while readLine() != nil {}
    stop()
    var lines = ""
    for sample in received.list.withLock({ $0 }) { lines += "\(sample.sequence) \(sample.at)\n" }
    BenchmarkProcess.say(lines + "end")
  }

  private static func observeStorage(_ path: String, into received: Samples) -> () -> Void {
    let storage = CodableStorage(
      defaultValue: TimedDocument(), path: path, updateMode: .manual,
      options: StorageOptions(flushesAtExit: false))
    let observation = storage.observe { change in
      let now = MachineStamp.now()
      guard change.origin == .external else { return }
      received.append(change.value.sequence, at: now)
    }
    return { withExtendedLifetime(storage) { observation.cancel() } }
  }

  private static func observeDocument(_ path: String, into received: Samples) -> () -> Void {
    let document = SharedDocument(path: path)
    _ = document.readIfChanged()
    let sequencePath = JSONPath(tokens: ["sequence"])
    let watch = FileWatcher.shared.watch(path) { reason in
      guard case .changed(let json) = document.readIfChanged(contentMayDiffer: reason.contentMayChangeInPlace) else { return }
      let now = MachineStamp.now()
      if let sequence = (try? json.value(at: sequencePath))??.numberValue?.int64Value {
        received.append(Int(sequence), at: now)
      }
    }
    return { watch.cancel() }
  }

  private static func observeWatcher(_ path: String, into received: Samples) -> () -> Void {
    let file = SharedFile(path: path)
    let last = Protected(-1)
    let watch = FileWatcher.shared.watch(path) { _ in
      guard let snapshot = try? file.read(), let sequence = number(after: "\"sequence\"", in: snapshot.bytes) else { return }
      let now = MachineStamp.now()
      let isNew = last.withLock { last in
        defer { last = sequence }
        return last != sequence
      }
      if isNew { received.append(sequence, at: now) }
    }
    return { watch.cancel() }
  }

  /// The digits after `key` (and any spaces, colon or quote), as the C floor finds them.
  private static func number(after key: String, in bytes: [UInt8]) -> Int? {
    let pattern = Array(key.utf8)
    guard bytes.count >= pattern.count else { return nil }
    for start in 0...(bytes.count - pattern.count) where bytes[start] == pattern[0] {
      guard Array(bytes[start..<(start + pattern.count)]) == pattern else { continue }
      var position = start + pattern.count
      while position < bytes.count, [UInt8(ascii: " "), UInt8(ascii: ":")].contains(bytes[position]) { position += 1 }
      var value = 0
      var digits = 0
      while position < bytes.count, bytes[position] >= UInt8(ascii: "0"), bytes[position] <= UInt8(ascii: "9") {
        value = value * 10 + Int(bytes[position] - UInt8(ascii: "0"))
        position += 1
        digits += 1
      }
      return digits > 0 ? value : nil
    }
    return nil
  }
}
