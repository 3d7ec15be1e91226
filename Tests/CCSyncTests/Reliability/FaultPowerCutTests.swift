import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// Power cuts: the file system under writers on a `scripts/powercut-fs` mount drops what it
/// had not made durable, in one of the orders a real file system may
/// (``PowerCutFileSystem/Order``), chosen at random for each cut, and the writers die (power
/// loss kills every process). Half the cuts (at random) come just before a random one of the
/// writers' next file-system changes, after which every operation fails with `EIO` until the
/// test has killed the writers; the others come after the writers were killed at a random
/// moment. After each cut the file holds one complete version; every durable write a
/// process acknowledged (printed after the call returned) is in it; a relaxed write may be
/// missing, and the file may come back empty or zero-filled (the documented loss of relaxed
/// writes on a file system that renames before it writes data), but never torn.
///
/// `CCSYNC_FAULT_POWER_CUTS` sets the number of cuts, shared between the four tests of saves
/// and updates (default 50; `.ci/run` asks for 1000), the mirror's test making a fiftieth of
/// it (at least 4); `CCSYNC_FAULT_POWER_SECONDS`, when set, bounds their time (a fifth each),
/// and the count done is reported. `CCSYNC_FAULT_SEED` repeats the delays
/// and orders. Skipped, saying why, when FUSE cannot mount here.
@Suite(.serialized) struct FaultPowerCutTests {
  /// The tests that share `CCSYNC_FAULT_POWER_CUTS` equally; the mirror's, whose rounds are
  /// slower, takes a fiftieth of it (at least 4), and a fifth of the time bound like each.
  static let tests = 4
  static let testsSharingTheTime = 5

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
  static func rounds(_ name: String, share: ((Int) -> Int)? = nil, _ round: (Int, inout SeededJSONRandom) throws -> Void) rethrows -> Int {
    let total = FaultTools.count("CCSYNC_FAULT_POWER_CUTS", default: 50)
    let share = share?(total) ?? (total + tests - 1) / tests
    let seconds = ProcessInfo.processInfo.environment["CCSYNC_FAULT_POWER_SECONDS"].flatMap { Double($0) }
    let seed = ProcessInfo.processInfo.environment["CCSYNC_FAULT_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...1_000_000)
    var random = SeededJSONRandom(seed: seed)
    let clock = ContinuousClock()
    let start = clock.now
    let end = seconds.map { start + .milliseconds(Int($0 * 1000) / testsSharingTheTime) }
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

  /// What one round's cut did.
  struct Cut {
    var order: PowerCutFileSystem.Order
    /// The writers' ends.
    var outcomes: [ChildProcess.Outcome]
    /// How many names the cut changed.
    var changed: Int
    /// The operation the cut came just before, when it was armed at one; `nil` when it came
    /// after the writers were killed.
    var beforeOperation: String?

    var label: String { "cut \(order.rawValue) " + (beforeOperation.map { "before a \($0)" } ?? "after the kill") }

    /// Expects a writer to have been killed, or, after a cut at an operation, to have failed
    /// with the `EIO` every operation got from then on.
    func expectKilled(_ outcome: ChildProcess.Outcome, _ label: String) {
      let failedByCut = beforeOperation != nil && outcome.standardOutput.contains("Input/output error")
      #expect(outcome.signaled || failedByCut, "\(label): \(outcome.summary)")
    }
  }

  /// Starts the writers and cuts the power under them: in half the rounds (at random) armed
  /// at a random one of their next `operations` changes, the writers killed once it came; in
  /// the others after killing them at a random 0 to `maximumDelay` milliseconds. The power
  /// is on again when it returns.
  static func cut(
    _ fileSystem: PowerCutFileSystem, operations: Int, maximumDelay: UInt32, _ random: inout SeededJSONRandom,
    writers start: () throws -> [ChildProcess]
  ) throws -> Cut {
    let order = random.pick(PowerCutFileSystem.Order.allCases)
    let armed = Bool.random(using: &random)
    if armed { try fileSystem.arm(after: Int.random(in: 1...operations, using: &random), order) }
    let children = try start()
    for child in children {
      #expect(waitUntil(deadline: .seconds(20)) { child.standardOutput.contains("ready") || !child.isRunning },
              "\(child.command) did not start")
    }
    if armed {
      #expect(waitUntil(deadline: .seconds(20)) { fileSystem.armedCutHappened(within: .zero) || children.allSatisfy { !$0.isRunning } })
    } else {
      usleep(UInt32.random(in: 0...maximumDelay, using: &random) * 1000)
    }
    for child in children { kill(child.process.processIdentifier, SIGKILL) }
    let outcomes = children.map { $0.wait() }
    if armed, let armedCut = fileSystem.armedCut() {
      try fileSystem.powerOn()
      return Cut(order: order, outcomes: outcomes, changed: armedCut.changed, beforeOperation: armedCut.operation)
    }
    return Cut(order: order, outcomes: outcomes, changed: try fileSystem.cut(order), beforeOperation: nil)
  }

  /// Counts of cuts by where they came, for the figures.
  static func tally(_ cut: Cut, into counts: inout [String: Int]) {
    counts[cut.beforeOperation.map { "before-\($0)" } ?? "after-kill", default: 0] += 1
  }

  static func report(_ name: String, placements counts: [String: Int]) {
    FaultTools.report("power-cuts.\(name).placements", counts.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
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
    var placements: [String: Int] = [:]
    var history = PowerCutHistoryCheck()
    let name = durable ? "durable-saves" : "relaxed-saves"
    let done = try Self.rounds(name) { round, random in
      let before = Self.classify(path)
      let from = (round + 1) * 1_000_000
      let cut = try Self.cut(fileSystem, operations: 120, maximumDelay: 40, &random) {
        [try ChildProcess.start(testHelper(), ["powercut-saves", path, String(from)] + (durable ? [] : ["--relaxed"]))]
      }
      let order = cut.order
      let label = "round \(round), \(cut.label)"
      let outcome = cut.outcomes[0]
      cut.expectKilled(outcome, label)
      Self.tally(cut, into: &placements)
      let acks = Self.numbers(after: "acked ", in: outcome.standardOutput)
      acknowledged += acks.count
      changedByCuts += cut.changed
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
      // The history is on (20 versions, the default): each durable save keeps the version it
      // replaced as a hard link, neither link nor log line made durable.
      if durable { try history.check(path, label) }
    }
    Self.expectSomethingDropped(changedByCuts, rounds: done)
    FaultTools.report("power-cuts.\(name).acknowledged", acknowledged)
    FaultTools.report("power-cuts.\(name).names-changed-by-cuts", changedByCuts)
    for (outcome, count) in outcomes.sorted(by: { $0.key < $1.key }) { FaultTools.report("power-cuts.\(name).\(outcome)", count) }
    if durable {
      FaultTools.report("power-cuts.\(name).last-acknowledged-was-newest", lastAcknowledgedWasNewest)
      history.report(name)
    }
    Self.report(name, placements: placements)
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
    var placements: [String: Int] = [:]
    let done = try Self.rounds("updates") { round, random in
      let cut = try Self.cut(fileSystem, operations: 200, maximumDelay: 60, &random) {
        try (0..<4).map { index in
          try ChildProcess.start(testHelper(), ["update-loop", path] + (index % 2 == 1 ? ["--storage"] : []))
        }
      }
      let label = "round \(round), \(cut.label)"
      let acks = cut.outcomes.flatMap { Self.numbers(after: "counted ", in: $0.standardOutput) }
      for outcome in cut.outcomes { cut.expectKilled(outcome, label) }
      Self.tally(cut, into: &placements)
      acknowledged += acks.count
      changedByCuts += cut.changed
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
    Self.report("updates", placements: placements)
  }

  /// `ccsync set FILE value N` with N counting up, one process after the other; the power is
  /// cut before a random one of their next 40 changes (the sets after it fail with `EIO`), or
  /// the set running is killed after a random part of the time a set takes and the cut
  /// follows. The value afterwards is the last acknowledged (exit status 0) or the one in
  /// flight at the cut.
  @Test func cliSetsSurvivePowerCuts() throws {
    let fileSystem = try PowerCutFileSystem()
    let path = fileSystem.file("cli.json")
    try Self.place("{\"value\": 0}\n", at: path, on: fileSystem)
    var acknowledged = 0
    var changedByCuts = 0
    var placements: [String: Int] = [:]
    var next: Int64 = 1
    var current: Int64 = 0
    let clock = ContinuousClock()
    var typical: Duration = .milliseconds(20)
    let done = try Self.rounds("cli-sets") { round, random in
      let order = random.pick(PowerCutFileSystem.Order.allCases)
      let armed = Bool.random(using: &random)
      var lastAcknowledged: Int64?
      var inFlight: Int64?
      var cut: Cut
      if armed {
        try fileSystem.arm(after: Int.random(in: 1...40, using: &random), order)
        var outcomes: [ChildProcess.Outcome] = []
        while !fileSystem.armedCutHappened(within: .zero) && outcomes.count < 20 {
          let outcome = try CLI.run(["set", path, "value", String(next)])
          if outcome.succeeded {
            lastAcknowledged = next
            acknowledged += 1
          } else if inFlight == nil {
            inFlight = next
          }
          outcomes.append(outcome)
          next += 1
        }
        let armedCut = try #require(fileSystem.armedCut(), "20 sets made fewer than 40 changes")
        try fileSystem.powerOn()
        cut = Cut(order: order, outcomes: outcomes, changed: armedCut.changed, beforeOperation: armedCut.operation)
        for outcome in outcomes where !outcome.succeeded {
          #expect(outcome.standardError.contains("Input/output error"), "round \(round), \(cut.label): \(outcome.summary)")
        }
      } else {
        // A few sets run to completion, then one is killed after a random part of the time
        // a set takes (most of which is the process starting, before it opens the file).
        let completed = Int.random(in: 0...2, using: &random)
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
        cut = Cut(order: order, outcomes: [], changed: try fileSystem.cut(order), beforeOperation: nil)
      }
      Self.tally(cut, into: &placements)
      changedByCuts += cut.changed
      let label = "round \(round), \(cut.label)"
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
    Self.report("cli-sets", placements: placements)
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
