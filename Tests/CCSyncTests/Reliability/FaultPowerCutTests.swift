import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// Power cuts: writers on a `scripts/powercut-fs` mount are killed at a random moment (power
/// loss kills every process), then the file system drops what it had not made durable, in
/// one of the orders a real file system may (``PowerCutFileSystem/Order``), chosen at random
/// for each cut. After each cut the file holds one complete version; every durable write a
/// process acknowledged (printed after the call returned) is in it; a relaxed write may be
/// missing, and the file may come back empty or zero-filled (the documented loss of relaxed
/// writes on a file system that renames before it writes data), but never torn.
///
/// `CCSYNC_FAULT_POWER_CUTS` sets the number of cuts, shared between the four tests (default
/// 50; `.ci/run` asks for 1000); `CCSYNC_FAULT_POWER_SECONDS`, when set, bounds their time
/// (shared likewise), and the count done is reported. `CCSYNC_FAULT_SEED` repeats the delays
/// and orders. Skipped, saying why, when FUSE cannot mount here.
@Suite(.serialized) struct FaultPowerCutTests {
  static let tests = 4

  /// The outcome of one round's file after its cut.
  enum Found: Equatable, CustomStringConvertible {
    case missing
    case empty
    case zeros
    case version(Int)
    case torn(String)

    var description: String {
      switch self {
      case .missing: return "no file"
      case .empty: return "an empty file"
      case .zeros: return "a zero-filled file"
      case .version(let version): return "version \(version)"
      case .torn(let text): return "a torn file: \(text)"
      }
    }

    var version: Int? {
      if case .version(let version) = self { return version }
      return nil
    }
  }

  /// The filler the helper's `PowerCutDocument` writes with `version`.
  static func filler(_ version: Int) -> String {
    let letters = Array("abcdefghijklmnopqrstuvwxyz")
    return String(repeating: letters[version % letters.count], count: 200 + (version % 17) * 300)
  }

  /// What the file at `path` holds: a complete `PowerCutDocument` version or something else.
  static func classify(_ path: String) -> Found {
    guard let data = FileManager.default.contents(atPath: path) else { return .missing }
    if data.isEmpty { return .empty }
    if data.allSatisfy({ $0 == 0 }) { return .zeros }
    let text = String(decoding: data.prefix(120), as: UTF8.self)
    guard let json = try? JSONValue(parsing: [UInt8](data)),
          let version = json.objectValue?["version"]?.numberValue?.int64Value.map(Int.init),
          json.objectValue?["filler"]?.stringValue == filler(version) else { return .torn(text) }
    return .version(version)
  }

  /// The number at `key` in the JSON document at `path`, or a description of what is there.
  static func number(at key: String, in path: String) -> Result<Int64, PowerCutCheckError> {
    guard let data = FileManager.default.contents(atPath: path) else { return .failure(.unreadable("no file")) }
    guard let json = try? JSONValue(parsing: [UInt8](data)) else {
      return .failure(.unreadable("not one complete document: \(String(decoding: data.prefix(120), as: UTF8.self).debugDescription)"))
    }
    guard let number = json.objectValue?[key]?.numberValue?.int64Value else { return .failure(.unreadable("no \(key): \(json.formatted(.compact))")) }
    return .success(number)
  }

  /// Writes `text` to `path` on the mount and makes it durable.
  static func place(_ text: String, at path: String, on fileSystem: PowerCutFileSystem) throws {
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    try fileSystem.sync()
  }

  /// Runs `round` until this test's share of `CCSYNC_FAULT_POWER_CUTS` is done or its share of
  /// `CCSYNC_FAULT_POWER_SECONDS` has passed, with a seeded generator for delays and orders.
  /// Reports the rounds done and the time taken as `fault-figure power-cuts.NAME`.
  @discardableResult
  static func rounds(_ name: String, _ round: (Int, inout SeededJSONRandom) throws -> Void) rethrows -> Int {
    let total = FaultTools.count("CCSYNC_FAULT_POWER_CUTS", default: 50)
    let share = (total + tests - 1) / tests
    let seconds = ProcessInfo.processInfo.environment["CCSYNC_FAULT_POWER_SECONDS"].flatMap { Double($0) }
    let seed = ProcessInfo.processInfo.environment["CCSYNC_FAULT_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...1_000_000)
    var random = SeededJSONRandom(seed: seed)
    let clock = ContinuousClock()
    let start = clock.now
    let end = seconds.map { start + .milliseconds(Int($0 * 1000) / tests) }
    var done = 0
    while done < share {
      if let end, clock.now >= end { break }
      try round(done, &random)
      done += 1
    }
    FaultTools.report("power-cuts.\(name)", done)
    FaultTools.report("power-cuts.\(name).seconds", String(format: "%.1f", Double((clock.now - start).components.seconds) + Double((clock.now - start).components.attoseconds) / 1e18))
    FaultTools.report("power-cuts.\(name).seed", seed)
    return done
  }

  /// Whether the cuts dropped anything at all, asked once a test made enough of them for a
  /// cut that drops nothing every time to mean a file system that keeps everything.
  static func expectSomethingDropped(_ changed: Int, rounds: Int) {
    guard rounds >= 40 else { return }
    #expect(changed > 0, "\(rounds) cuts dropped nothing: the file system keeps everything")
  }

  static func pickOrder(_ random: inout SeededJSONRandom) -> PowerCutFileSystem.Order {
    random.pick(PowerCutFileSystem.Order.allCases)
  }

  /// Waits for every child's `ready` line, sleeps a random 0 to `maximumDelay` milliseconds,
  /// then kills them all at once and waits for each: the power goes.
  static func killAll(_ children: [ChildProcess], after maximumDelay: UInt32, _ random: inout SeededJSONRandom) -> [ChildProcess.Outcome] {
    for child in children {
      #expect(waitUntil(deadline: .seconds(20)) { child.standardOutput.contains("ready") || !child.isRunning },
              "\(child.command) did not start")
    }
    usleep(UInt32.random(in: 0...maximumDelay, using: &random) * 1000)
    for child in children { kill(child.process.processIdentifier, SIGKILL) }
    return children.map { $0.wait() }
  }

  static func numbers(after prefix: String, in output: String) -> [Int] {
    output.split(separator: "\n").compactMap { line in line.hasPrefix(prefix) ? Int(line.dropFirst(prefix.count)) : nil }
  }

  /// One writer saving whole versions, durable or relaxed, cut at a random moment, round
  /// after round on the same mount (each cut's result is the next round's start).
  func saves(durable: Bool) throws {
    let fileSystem = try PowerCutFileSystem()
    let path = fileSystem.file("settings.json")
    let base = "{\"version\": 0, \"filler\": \"\(Self.filler(0))\"}\n"
    try Self.place(base, at: path, on: fileSystem)
    var acknowledged = 0
    var changedByCuts = 0
    var lastAcknowledgedWasNewest = 0
    var outcomes: [String: Int] = [:]
    let name = durable ? "durable-saves" : "relaxed-saves"
    let done = try Self.rounds(name) { round, random in
      let before = Self.classify(path)
      let from = (round + 1) * 1_000_000
      let child = try ChildProcess.start(testHelper(), ["powercut-saves", path, String(from)] + (durable ? [] : ["--relaxed"]))
      let outcome = Self.killAll([child], after: 40, &random)[0]
      let order = Self.pickOrder(&random)
      let label = "round \(round), cut \(order.rawValue)"
      #expect(outcome.signaled, "\(label): the writer was not killed: \(outcome.summary)")
      let acks = Self.numbers(after: "acked ", in: outcome.standardOutput)
      acknowledged += acks.count
      changedByCuts += try fileSystem.cut(order)
      let after = Self.classify(path)
      // The versions the file may hold: the last acknowledged one or the one in flight after
      // it; with no acknowledgement, the round's start or its first version. Relaxed writes
      // may also lose every version of the round.
      let floor = acks.last ?? before.version ?? 0
      let ceiling = (acks.last ?? from) + 1
      var allowed = Set([floor, ceiling])
      if acks.isEmpty, let start = before.version { allowed.insert(start) }
      switch after {
      case .version(let version) where durable:
        #expect(allowed.contains(version), "\(label): \(after) after acknowledging \(acks.suffix(3)) (round began with \(before))")
        if version == acks.last { lastAcknowledgedWasNewest += 1 }
        outcomes["kept", default: 0] += 1
      case .version(let version):
        let roundVersions = (from + 1)...ceiling
        #expect(roundVersions.contains(version) || version == before.version, "\(label): \(after), not a version written (round began with \(before))")
        outcomes[version >= floor ? "kept" : "older", default: 0] += 1
      case .empty where !durable && order != .renamesLost, .zeros where !durable && order != .renamesLost:
        outcomes["emptied", default: 0] += 1
        try Self.place(base, at: path, on: fileSystem)
      default:
        Issue.record("\(label): \(after) after acknowledging \(acks.suffix(3)) (round began with \(before))")
        try Self.place(base, at: path, on: fileSystem)
      }
    }
    Self.expectSomethingDropped(changedByCuts, rounds: done)
    FaultTools.report("power-cuts.\(name).acknowledged", acknowledged)
    FaultTools.report("power-cuts.\(name).names-changed-by-cuts", changedByCuts)
    for (outcome, count) in outcomes.sorted(by: { $0.key < $1.key }) { FaultTools.report("power-cuts.\(name).\(outcome)", count) }
    if durable { FaultTools.report("power-cuts.\(name).last-acknowledged-was-newest", lastAcknowledgedWasNewest) }
    FaultTools.report("power-cuts.\(name).fs", fileSystem.statistics())
  }

  @Test func durableSavesSurvivePowerCuts() throws {
    try saves(durable: true)
  }

  @Test func relaxedSavesMayBeLostButAreNeverTorn() throws {
    try saves(durable: false)
  }

  /// Four processes doing exact `update { counter += 1 }` (two through `SharedDocument`, two
  /// through a watching `.immediate` `CodableStorage`), cut at a random moment: the counter
  /// afterwards is at least the highest any process acknowledged, and never below the last
  /// cut's.
  @Test func updatesByFourProcessesSurvivePowerCuts() throws {
    let fileSystem = try PowerCutFileSystem()
    let path = fileSystem.file("counter.json")
    try Self.place("{\"counter\": 0}\n", at: path, on: fileSystem)
    var acknowledged = 0
    var changedByCuts = 0
    var base: Int64 = 0
    let done = try Self.rounds("updates") { round, random in
      let children = try (0..<4).map { index in
        try ChildProcess.start(testHelper(), ["update-loop", path] + (index % 2 == 1 ? ["--storage"] : []))
      }
      let outcomes = Self.killAll(children, after: 60, &random)
      let order = Self.pickOrder(&random)
      let label = "round \(round), cut \(order.rawValue)"
      let acks = outcomes.flatMap { Self.numbers(after: "counted ", in: $0.standardOutput) }
      for outcome in outcomes { #expect(outcome.signaled, "\(label): an updater was not killed: \(outcome.summary)") }
      acknowledged += acks.count
      changedByCuts += try fileSystem.cut(order)
      switch Self.number(at: "counter", in: path) {
      case .success(let counter):
        let highest = Int64(acks.max() ?? 0)
        #expect(counter >= highest, "\(label): counter \(counter) after \(highest) was acknowledged")
        #expect(counter >= base, "\(label): counter \(counter) below the last cut's \(base)")
        base = counter
      case .failure(let error):
        Issue.record("\(label): \(error)")
        try Self.place("{\"counter\": \(base)}\n", at: path, on: fileSystem)
      }
    }
    Self.expectSomethingDropped(changedByCuts, rounds: done)
    FaultTools.report("power-cuts.updates.acknowledged", acknowledged)
    FaultTools.report("power-cuts.updates.final-counter", base)
    FaultTools.report("power-cuts.updates.names-changed-by-cuts", changedByCuts)
    FaultTools.report("power-cuts.updates.fs", fileSystem.statistics())
  }

  /// `ccsync set FILE value N` with N counting up, one process after the other, the one
  /// running killed at a random moment: the value afterwards is the last acknowledged (exit
  /// status 0) or the one in flight.
  @Test func cliSetsSurvivePowerCuts() throws {
    let fileSystem = try PowerCutFileSystem()
    let path = fileSystem.file("cli.json")
    try Self.place("{\"value\": 0}\n", at: path, on: fileSystem)
    var acknowledged = 0
    var changedByCuts = 0
    var next: Int64 = 1
    var current: Int64 = 0
    let clock = ContinuousClock()
    var typical: Duration = .milliseconds(20)
    let done = try Self.rounds("cli-sets") { round, random in
      // A few sets run to completion, then one is killed after a random part of the time a
      // set takes (most of which is the process starting, before it opens the file).
      let completed = Int.random(in: 0...2, using: &random)
      var lastAcknowledged: Int64?
      var inFlight: Int64?
      for index in 0...completed {
        let started = clock.now
        let child = try CLI.start(["set", path, "value", String(next)])
        inFlight = next
        next += 1
        let limit = index < completed ? Duration.seconds(30) : typical * Double.random(in: 0...1.5, using: &random)
        if waitUntil(deadline: limit, { !child.isRunning }) {
          let outcome = child.wait()
          #expect(outcome.succeeded, "round \(round): \(outcome.summary)")
          if outcome.succeeded {
            lastAcknowledged = inFlight
            acknowledged += 1
            typical = (typical * 7 + (clock.now - started)) / 8
          }
        } else {
          kill(child.process.processIdentifier, SIGKILL)
          _ = child.wait()
        }
      }
      let order = Self.pickOrder(&random)
      let label = "round \(round), cut \(order.rawValue)"
      changedByCuts += try fileSystem.cut(order)
      switch Self.number(at: "value", in: path) {
      case .success(let value):
        var allowed = Set([lastAcknowledged ?? current])
        if let inFlight { allowed.insert(inFlight) }
        #expect(allowed.contains(value), "\(label): value \(value), last acknowledged \(lastAcknowledged.map(String.init) ?? "none"), in flight \(inFlight.map(String.init) ?? "none")")
        current = value
      case .failure(let error):
        Issue.record("\(label): \(error)")
        try Self.place("{\"value\": \(current)}\n", at: path, on: fileSystem)
      }
    }
    Self.expectSomethingDropped(changedByCuts, rounds: done)
    FaultTools.report("power-cuts.cli-sets.acknowledged", acknowledged)
    FaultTools.report("power-cuts.cli-sets.names-changed-by-cuts", changedByCuts)
    FaultTools.report("power-cuts.cli-sets.fs", fileSystem.statistics())
  }
}

enum PowerCutCheckError: Error, CustomStringConvertible {
  case unreadable(String)

  var description: String {
    switch self {
    case .unreadable(let what): return what
    }
  }
}
