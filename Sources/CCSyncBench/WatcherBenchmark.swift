import CCSync
import CCSyncProcesses
import Foundation
import Synchronization

/// `ccsync-bench watch-files DIR COUNT`: a process that keeps COUNT (0 or more) watched
/// `CodableStorage` values, on `DIR/watched-0.json` ... (which the driver creates), and does
/// nothing else. It prints `ready` once all are loaded and watched; the driver then reads its
/// resident memory and CPU time from `/proc`, rewrites neighbouring files, and closes its
/// standard input, on which it prints `reloads N` (external changes heard) and exits.
enum WatcherBenchmark {
  static let usage = "USAGE: ccsync-bench watch-files DIR COUNT"

  static func run(arguments: [String]) {
    guard arguments.count == 2, let count = Int(arguments[1]), count >= 0 else { BenchmarkProcess.fail(usage, code: 64) }
    let reloads = Atomic<Int>(0)
    var storages: [CodableStorage<ContentionBenchmark.CounterSettings>] = []
    var observations: [StorageObservation] = []
    for index in 0..<count {
      let storage = CodableStorage(
        defaultValue: ContentionBenchmark.CounterSettings(), path: arguments[0] + "/watched-\(index).json",
        updateMode: .manual, options: StorageOptions(flushesAtExit: false))
      observations.append(storage.observe { change in
        if change.origin == .external { reloads.add(1, ordering: .relaxed) }
      })
      storages.append(storage)
    }
    BenchmarkProcess.say("ready")
    while readLine() != nil {}
    withExtendedLifetime(storages) {}
    observations.forEach { $0.cancel() }
    BenchmarkProcess.say("reloads \(reloads.load(ordering: .relaxed))")
  }
}
