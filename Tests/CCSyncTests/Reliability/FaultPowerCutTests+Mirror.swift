import Foundation
import Testing
import CCSyncJSON
@testable import CCSyncEtcd

extension FaultPowerCutTests {
  /// The document the mirror test shares: `remote` written to the key from outside (`ccsync
  /// set etcd://...`), `local` written to the file (`ccsync set FILE`), each counting up.
  static let mirrorFields = ["remote", "local"]

  /// Both counters of a document, or why it is not one complete version.
  static func counters(_ path: String) -> Result<[String: Int64], PowerCutCheckError> {
    var counters: [String: Int64] = [:]
    for field in mirrorFields {
      switch number(at: field, in: path) {
      case .success(let value): counters[field] = value
      case .failure(let error): return .failure(error)
      }
    }
    return .success(counters)
  }

  /// A `ccsync mirror` of a file on `scripts/powercut-fs` (the file, its state file
  /// `.NAME.ccsync-mirror` and its history all on the mount) to a key of a real etcd member
  /// (on the ordinary file system). Each round, with the mirror running and in sync, the
  /// power is cut before a random one of the next 80 changes on the mount (the mirror's and
  /// the local writer's; half the rounds, at random) or after the mirror was killed at a
  /// random moment, while the key is written from outside and the file locally, alternately.
  /// After the cut the mirror is dead (killed), the file must be one complete version, and
  /// a restarted mirror must bring file and key to one document within 30 s, holding every
  /// write acknowledged to either side (each counter at least its last acknowledged value,
  /// never below the last round's). `CCSYNC_FAULT_POWER_CUTS / 50` rounds (at least 4).
  @Test func mirrorSyncSurvivesPowerCuts() throws {
    let fileSystem = try PowerCutFileSystem()
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let cluster = try EtcdCluster()
    defer { cluster.shutdown() }
    let url = "etcd://" + cluster.endpoints.joined(separator: ",") + "/powercut"
    let client = try cluster.client(deadline: .seconds(2), attemptTimeout: .seconds(1))
    let path = fileSystem.file("mirrored.json")
    try Self.place("{\"remote\": 0, \"local\": 0}\n", at: path, on: fileSystem)
    let arguments = ["--host-name", "powercut", path, url]
    var mirror = try MirrorProcess(arguments, in: directory)
    #expect(mirror.waitUntilReady(), "no READY=1 from the first mirror: \(mirror.standardError)")
    var last: [String: Int64] = ["remote": 0, "local": 0]
    var writesAcknowledged = 0
    var changedByCuts = 0
    var placements: [String: Int] = [:]
    var convergence: [Duration] = []
    let done = try Self.rounds("mirror", share: { max(4, $0 / 50) }) { round, random in
      let order = random.pick(PowerCutFileSystem.Order.allCases)
      let armed = Bool.random(using: &random)
      if armed { try fileSystem.arm(after: Int.random(in: 1...80, using: &random), order) }
      var acknowledged = last
      var next = last
      // Remote, local, remote, local...: without an armed cut the round ends on a local write,
      // the mirror killed 0 to 10 ms later, mostly before it sent that write to the key.
      let writes = armed ? 24 : 2 * Int.random(in: 1...4, using: &random)
      for index in 0..<writes {
        if armed && fileSystem.armedCutHappened(within: .zero) { break }
        let field = Self.mirrorFields[index % 2]
        next[field, default: 0] += 1
        let target = field == "remote" ? url : path
        let outcome = try CLI.run(["set", target, field, String(next[field]!)])
        if outcome.succeeded {
          acknowledged[field] = next[field]
          writesAcknowledged += 1
        }
      }
      if armed {
        // Not reached when the writes and syncs made fewer changes: then it comes after the kill.
        _ = fileSystem.armedCutHappened(within: .seconds(2))
      } else {
        usleep(UInt32.random(in: 0...10, using: &random) * 1000)
      }
      mirror.kill()
      var cut: Cut
      if armed, let armedCut = fileSystem.armedCut() {
        try fileSystem.powerOn()
        cut = Cut(order: order, outcomes: [], changed: armedCut.changed, beforeOperation: armedCut.operation)
      } else {
        cut = Cut(order: order, outcomes: [], changed: try fileSystem.cut(order), beforeOperation: nil)
      }
      Self.tally(cut, into: &placements)
      changedByCuts += cut.changed
      let label = "round \(round), \(cut.label)"
      if case .failure(let error) = Self.counters(path) {
        Issue.record("\(label): the file after the cut: \(error)")
        try Self.place("{\"remote\": \(acknowledged["remote"]!), \"local\": \(acknowledged["local"]!)}\n", at: path, on: fileSystem)
      }
      let started = ContinuousClock.now
      mirror = try MirrorProcess(arguments, in: directory)
      #expect(mirror.waitUntilReady(deadline: .seconds(30)), "\(label): no READY=1 from the restarted mirror: \(mirror.standardError)")
      var agreed: [String: Int64]?
      let converged = waitUntil(deadline: .seconds(30)) {
        guard case .success(let file) = Self.counters(path),
              let key = (try? client.get(Array("powercut".utf8)))?.keyValue,
              let value = try? JSONValue(parsing: key.value),
              fileValue(path) == value else { return false }
        agreed = file
        return true
      }
      convergence.append(ContinuousClock.now - started)
      guard converged, let agreed else {
        Issue.record("\(label): the restarted mirror did not bring file and key together in 30 s; file: \(String(decoding: CLI.bytes(path) ?? Data(), as: UTF8.self)); mirror: \(mirror.standardError)")
        return
      }
      for field in Self.mirrorFields {
        #expect(agreed[field]! >= acknowledged[field]!, "\(label): \(field) \(agreed[field]!) after \(acknowledged[field]!) was acknowledged")
        #expect(agreed[field]! >= last[field]!, "\(label): \(field) \(agreed[field]!) below the last round's \(last[field]!)")
      }
      last = agreed
    }
    mirror.terminate()
    FaultTools.report("power-cuts.mirror.writes-acknowledged", writesAcknowledged)
    FaultTools.report("power-cuts.mirror.names-changed-by-cuts", changedByCuts)
    FaultTools.report("power-cuts.mirror.final", "remote=\(last["remote"]!) local=\(last["local"]!)")
    if let slowest = convergence.max() {
      let seconds = Double(slowest.components.seconds) + Double(slowest.components.attoseconds) / 1e18
      FaultTools.report("power-cuts.mirror.slowest-restart-to-agreement-seconds", String(format: "%.2f", seconds))
    }
    FaultTools.report("power-cuts.mirror.fs", fileSystem.statistics())
    Self.report("mirror", placements: placements)
    Self.expectSomethingDropped(changedByCuts, rounds: done)
  }
}
