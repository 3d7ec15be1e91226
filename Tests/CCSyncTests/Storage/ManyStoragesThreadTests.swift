import Foundation
import Testing

/// A process holding 1000 `key:` storages (as WLStorage's users keep one per key) keeps a
/// bounded number of threads whatever it does with them: the reloads of all its storages share
/// a small pool (docs/ARCHITECTURE.md, "Threads"), not a thread per storage with work.
///
/// The process is `ccsync-bench many-storages` (Sources/CCSyncBench/ManyStoragesBenchmark.swift),
/// run here for its thread count alone: it creates the storages, sets and flushes all of
/// them, and has a child process write to keys while the echoes of its own writes are still
/// arriving, counting `/proc/self/task` every 0.5 ms throughout. Its own timings are the
/// benchmark's business (bench/run), not this test's.
@Suite struct ManyStoragesThreadTests {
  @Test func thousandStoragesNeverExceedSixteenThreads() throws {
    try withTemporaryDirectory { directory in
      let child = try InteractiveChild(
        try ChildProcess.builtExecutable("ccsync-bench"),
        ["many-storages", "--storages", "1000", "--rounds", "2", "--writes", "10", "--relaxed", "--directory", directory.path])
      let line = try #require(child.nextLine(startingWith: "result ", deadline: .seconds(600)),
                              "no result: \(child.standardError)")
      #expect(child.finish() == 0, "\(child.standardError)")
      let figures = Dictionary(uniqueKeysWithValues: line.split(separator: " ").dropFirst().compactMap { pair -> (String, String)? in
        let parts = pair.split(separator: "=", maxSplits: 1)
        return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
      })
      #expect(figures["writes"] == "20", "every write of the other process was seen: \(line)")
      let peak = try #require(figures["peakThreads"].flatMap { Int($0) }, "\(line)")
      #expect(peak <= 16, "1000 storages had \(peak) threads at once: \(line)")
    }
  }
}
