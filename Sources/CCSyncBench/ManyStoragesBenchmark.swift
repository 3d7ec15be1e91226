import CCSync
import CCSyncProcesses
import CCSyncSystem
import Foundation
import Glibc

/// A client of the library holding N `key:` storages in one process, as WLStorage's users
/// keep one storage per key: how long creating them takes (each writes its default, durably),
/// how long setting every value and flushing them all takes, how many threads the process has
/// at most meanwhile (`/proc/self/task`, sampled every 0.5 ms), and how soon another process's
/// write to one key is seen by that key's observer right after the flush of all N (when this
/// process's own N writes are still echoing back through inotify).
///
/// The other process is a real child, `ccsync-bench many-storages-writer`: after each flush it
/// replaces `--writes` keys' files one after another (write a temporary file, rename it over;
/// the next once this process has seen the last), stamping `CLOCK_MONOTONIC` just before each
/// rename; the delay is from that stamp to the observer's call. `bench/run --only many` runs it with N = 100 and 1000; the last line is `result` and
/// `key=value` pairs for the driver.
enum ManyStoragesBenchmark {
  static let usage =
    "USAGE: ccsync-bench many-storages [--storages N] [--rounds N] [--writes N] [--directory DIR] [--relaxed]\n"
    + "       (--directory: where the keys' directory is made, default the temporary directory;\n"
    + "       --relaxed: StorageOptions(durable: false), for a quicker check of the thread count)"

  /// The value each key holds.
  struct KeyValue: Codable, Sendable, Equatable {
    var counter = 0
    var name = "default"
  }

  static func run(arguments: [String]) {
    let count = Int(BenchmarkProcess.option("--storages", in: arguments) ?? "1000") ?? 0
    let rounds = Int(BenchmarkProcess.option("--rounds", in: arguments) ?? "5") ?? 0
    let writes = Int(BenchmarkProcess.option("--writes", in: arguments) ?? "20") ?? 0
    guard count > 0, rounds > 0, writes > 0, writes <= count else { BenchmarkProcess.fail(usage, code: 64) }
    let durable = !arguments.contains("--relaxed")
    var parent = BenchmarkProcess.option("--directory", in: arguments) ?? FileManager.default.temporaryDirectory.path
    // XDG_DATA_HOME counts only when absolute.
    if !parent.hasPrefix("/") { parent = FileManager.default.currentDirectoryPath + "/" + parent }
    let scratch = parent + "/ccsync-many-" + UUID().uuidString
    // The `key:` initialisers' directory is $XDG_DATA_HOME/PROGRAM/keys: a scratch one.
    setenv("XDG_DATA_HOME", scratch, 1)
    defer { try? FileManager.default.removeItem(atPath: scratch) }
    let sampler: ThreadCountSampler
    do { sampler = try ThreadCountSampler() } catch { BenchmarkProcess.fail("thread sampler: \(error)") }
    let baseThreads = ThreadCountSampler.currentCount() - 1

    let seen = SeenStamps()
    let options = StorageOptions(durable: durable, flushesAtExit: false, logger: .silent)
    var storages: [CodableStorage<KeyValue>] = []
    storages.reserveCapacity(count)
    var observations: [StorageObservation] = []
    let createStart = ContinuousClock.now
    for index in 0..<count {
      let storage = CodableStorage(key: "key-\(index)", defaultValue: KeyValue(), options: options)
      observations.append(storage.observe { change in
        if change.origin == .external { seen.record(index: index, counter: change.value.counter) }
      })
      storages.append(storage)
    }
    let create = seconds(ContinuousClock.now - createStart)
    let afterCreate = ThreadCountSampler.currentCount() - 1
    let directory = FilePath.directory(of: storages[0].path)
    let files = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".json") }.count
    guard files == count else { BenchmarkProcess.fail("\(files) files in '\(directory)' after creating \(count) storages") }

    let writer = WriterChild()
    var setFlush: [Double] = []
    var delays: [Double] = []
    for round in 1...rounds {
      let start = ContinuousClock.now
      for (index, storage) in storages.enumerated() { storage.wrappedValue = KeyValue(counter: round * 1_000_000 + index, name: "mine") }
      for storage in storages {
        do { try storage.flush() } catch { BenchmarkProcess.fail("flush '\(storage.path)': \(error)") }
      }
      setFlush.append(seconds(ContinuousClock.now - start))
      // Right after the flush: the other process writes `writes` keys spread over all N, one
      // at a time (the next once this process has seen the last), so that each delay is one
      // write's and none waits behind the others.
      let marker = -round
      for write in 0..<writes {
        let key = (write * 7919 + round * 131) % count
        let written = writer.write([FilePath.join(directory, "key-\(key).json")], counter: marker)[0]
        guard let observed = seen.wait(index: key, counter: marker, deadline: .now + .seconds(30)) else {
          BenchmarkProcess.fail("round \(round): key-\(key)'s write by the other process was not seen within 30 s")
        }
        delays.append(Double(observed - written) / 1e6)
      }
    }
    writer.finish()
    let peak = sampler.stop() - 1
    let after = ThreadCountSampler.currentCount()
    withExtendedLifetime((storages, observations)) {}

    let sorted = delays.sorted()
    func percentile(_ share: Double) -> Double { sorted[min(sorted.count - 1, Int((Double(sorted.count) * share).rounded(.up)) - 1)] }
    print("many storages: \(count) `key:` storages in one process, \(durable ? "durable" : "relaxed") writes")
    print("  create all: \(fixed(create, 3)) s (\(fixed(create / Double(count) * 1000, 3)) ms per storage)")
    print("  set + flush all, per round: \(setFlush.map { fixed($0, 3) }.joined(separator: ", ")) s")
    print("  another process's write seen after: p50 \(fixed(percentile(0.5), 2)) ms, p99 \(fixed(percentile(0.99), 2)) ms, "
      + "max \(fixed(sorted.last ?? 0, 2)) ms over \(sorted.count) writes")
    print("  threads: \(baseThreads) before, \(afterCreate) after creating, peak \(peak) (\(sampler.samples) samples), \(after) at the end")
    print("result storages=\(count) create=\(create) perStorageMs=\(create / Double(count) * 1000) setFlush=\(median(setFlush)) "
      + "seenP50=\(percentile(0.5)) seenP99=\(percentile(0.99)) seenMax=\(sorted.last ?? 0) peakThreads=\(peak) "
      + "threadsAfter=\(after) baseThreads=\(baseThreads) writes=\(sorted.count)")
  }

  /// The other process: `many-storages-writer` reads lines `COUNTER PATH...`, replaces each
  /// file with `{"counter": COUNTER, "name": "other"}` (a temporary file renamed over it) and
  /// answers one line of `CLOCK_MONOTONIC` stamps, each taken just before its rename.
  static func runWriter() {
    while let line = readLine() {
      let parts = line.split(separator: " ").map(String.init)
      guard let counter = Int(parts.first ?? "") else { BenchmarkProcess.fail("many-storages-writer: bad line '\(line)'", code: 64) }
      var stamps: [String] = []
      for path in parts.dropFirst() {
        let temporary = path + ".writer-tmp"
        let bytes = Array(#"{"counter": \#(counter), "name": "other"}"#.utf8)
        guard FileManager.default.createFile(atPath: temporary, contents: Data(bytes)) else {
          BenchmarkProcess.fail("many-storages-writer: cannot write '\(temporary)'")
        }
        stamps.append(String(MachineStamp.now()))
        guard rename(temporary, path) == 0 else { BenchmarkProcess.fail("many-storages-writer: rename to '\(path)': errno \(errno)") }
      }
      BenchmarkProcess.say(stamps.joined(separator: " "))
    }
  }

  /// When each key's observer heard the other process's value. `Sendable`: a `ConditionLock`
  /// guards `stamps` (`@unchecked`).
  private final class SeenStamps: @unchecked Sendable {
    private let condition = ConditionLock()
    private var stamps: [Int: (counter: Int, stamp: Int64)] = [:]

    func record(index: Int, counter: Int) {
      let stamp = MachineStamp.now()
      condition.withLock {
        stamps[index] = (counter, stamp)
        condition.broadcast()
      }
    }

    /// The stamp of key `index`'s observer call with `counter`, waiting until `deadline`.
    func wait(index: Int, counter: Int, deadline: ContinuousClock.Instant) -> Int64? {
      condition.withLock {
        while true {
          if let seen = stamps[index], seen.counter == counter { return seen.stamp }
          if ContinuousClock.now >= deadline { return nil }
          condition.wait(until: deadline)
        }
      }
    }
  }

  /// The writer child and the pipes to it, started with `posix_spawn` (no helper thread).
  private final class WriterChild {
    private let child: Subprocess
    private let toChild: FileDescriptor
    private let fromChild: FileDescriptor
    private var buffered: [UInt8] = []

    init() {
      do {
        let input = try FileDescriptor.makePipe()
        let output = try FileDescriptor.makePipe()
        child = try Subprocess.spawn([ThisProcess.executablePath, "many-storages-writer"],
                                     standardInput: input.readEnd, standardOutput: output.writeEnd)
        try input.readEnd.close()
        try output.writeEnd.close()
        (toChild, fromChild) = (input.writeEnd, output.readEnd)
      } catch {
        BenchmarkProcess.fail("cannot start the writer child: \(error)")
      }
    }

    /// Has the child replace `paths` with `counter`; returns its stamps, one per path.
    func write(_ paths: [String], counter: Int) -> [Int64] {
      do {
        try toChild.writeAll(Array((([String(counter)] + paths).joined(separator: " ") + "\n").utf8))
        while !buffered.contains(UInt8(ascii: "\n")) {
          guard case .bytes(let bytes) = try fromChild.readOnce() else { BenchmarkProcess.fail("the writer child ended") }
          buffered += bytes
        }
      } catch {
        BenchmarkProcess.fail("writer child: \(error)")
      }
      let end = buffered.firstIndex(of: UInt8(ascii: "\n"))!
      let line = String(decoding: buffered[..<end], as: UTF8.self)
      buffered.removeSubrange(...end)
      let stamps = line.split(separator: " ").compactMap { Int64($0) }
      guard stamps.count == paths.count else { BenchmarkProcess.fail("the writer child answered '\(line)'") }
      return stamps
    }

    /// Closes its input, so it ends, and reaps it.
    func finish() {
      try? toChild.close()
      _ = try? child.waitForExit()
    }
  }
}
