import Foundation
import Testing
@testable import CCSyncEtcd
import CCSyncSystem
import CCSyncJSON

/// Partitions between real hosts: each etcd member and each ccsync host runs in a network
/// namespace of its own (``NetworkLab``), joined to the others through a bridge; a partition
/// takes a host's link down, healing brings it up. Every `ccsync` call is recorded (invoked,
/// returned, ok, failed or unknown: ``RegisterHistory``) and the history checked for
/// linearizability where the scenario makes the key a register. Each scenario ends by
/// itself: every wait has a deadline and every process a kill. Skipped, saying why, unless
/// the tests run as root with `ip` and etcd installed.
@Suite(
  .serialized, .enabled(if: NetworkLab.isAvailable, NetworkLab.unavailableMessage),
  .enabled(if: EtcdCluster.isInstalled, EtcdCluster.absentMessage))
struct FaultPartitionTests {
  /// Election settings for members on a loaded two-core machine: fast enough that a
  /// scenario takes seconds, slow enough that a busy machine does not look like a partition.
  static let heartbeat = 50
  static let election = 500

  /// The lab itself: hosts reach each other, a cut host is unreachable both ways (a
  /// connection attempt gets no answer, not a refusal), a healed one reachable again, and
  /// nothing the lab made is left after it shuts down.
  @Test func labCutsAndHealsLinksAndLeavesNothingBehind() throws {
    let lab = try NetworkLab()
    defer { lab.shutdown() }
    let a = try lab.addHost("a")
    let b = try lab.addHost("b")
    // Port 9 has no listener: a reachable host refuses at once; an unreachable one is silent.
    let attempt: @Sendable () -> SystemError? = {
      do throws(SystemError) {
        try TCPSocket.connect(host: b.address, port: 9, deadline: .now + .milliseconds(500)).close()
        return nil
      } catch {
        return error
      }
    }
    #expect(try lab.inside(a, attempt)?.code == ECONNREFUSED)
    try lab.cut(b)
    #expect(try lab.inside(a, attempt)?.code == ETIMEDOUT)
    try lab.heal(b)
    // A healed link carries packets once the bridge port forwards again.
    let reachable = waitUntil(deadline: .seconds(10)) {
      let failure = try? lab.inside(a, attempt)
      return failure?.code == ECONNREFUSED
    }
    #expect(reachable)
    #expect(NetworkLab.existingNamespaces().count == 3)
    lab.shutdown()
    #expect(NetworkLab.existingNamespaces().isEmpty)
  }

  /// Item 5's functional side: with the first endpoint cut off, a `ccsync get` naming all
  /// three members succeeds (and so does a set); how fast is measured by `bench/run --only
  /// partition`.
  @Test func getWithTheFirstEndpointCutOffSucceeds() throws {
    try Self.withCluster { lab, cluster, client in
      let ccsync = try ChildProcess.builtExecutable("ccsync")
      let url = cluster.url("partition/first-cut")
      try lab.cut(try #require(cluster.members.first?.host))
      let set = try lab.run(in: client, ccsync, ["set", url, "value", "7"], deadline: .seconds(60))
      #expect(set.succeeded, "\(set.summary)")
      let get = try lab.run(in: client, ccsync, ["get", url, "value"], deadline: .seconds(60))
      #expect(get.succeeded && get.standardOutput == "7\n", "\(get.summary)")
    }
  }

  /// A new client whose first endpoint is cut off does not wait for it: every endpoint is
  /// dialled at once (staggered), the first to connect serves the call. Shown without a
  /// clock: the call's deadline (3 s) is shorter than one attempt (30 s), so a client that
  /// tried the first endpoint alone would spend the whole deadline on it and fail with a
  /// timeout (as it did before the endpoints were raced).
  @Test func aNewClientDoesNotWaitForACutOffFirstEndpoint() throws {
    try Self.withCluster { lab, cluster, _ in
      let put = try cluster.etcdctl(["put", "partition/raced", "1"])
      #expect(put.succeeded, "\(put.summary)")
      try lab.cut(try #require(cluster.members.first?.host))
      let client = try cluster.client(deadline: .seconds(3), attemptTimeout: .seconds(30))
      let values = try cluster.onControl {
        try client.range(.key(Array("partition/raced".utf8))).keyValues.map { String(decoding: $0.value, as: UTF8.self) }
      }
      #expect(values == ["1"])
    }
  }

  /// (e) A minority partition: one follower cut off from the other two. Writes through it
  /// fail within ccsync's deadline with 69 or 75 (never hang, never succeed); reads through
  /// it never return a value older than a write acknowledged before the partition; the
  /// majority goes on; after healing the minority member serves the newest value; the whole
  /// history of writes and reads from both sides is linearizable.
  @Test func minorityPartitionRefusesWritesAndNeverReadsStale() throws {
    try Self.withCluster { lab, cluster, client in
      let history = try RegisterHistory(lab: lab)
      let leader = try cluster.leaderIndex()
      let minorityIndex = (leader + 1) % 3
      let members = cluster.members
      let minority = try #require(members[minorityIndex].host)
      let majority = members.indices.filter { $0 != minorityIndex }.map { members[$0].endpoint }
      let majorityURL = "etcd://" + majority.joined(separator: ",") + "/partition/register"
      let minorityURL = "etcd://\(members[minorityIndex].endpoint)/partition/register"

      try history.write(0, to: majorityURL, from: client, process: 0)
      for value in 1...3 { try history.write(value, to: majorityURL, from: client, process: 0) }
      try history.read(minorityURL, from: minority, process: 1)
      try lab.cut(minority)
      // Both sides at once: the minority host writes and reads through its own member, the
      // client host writes and reads through the majority.
      let minorityWriter = BackgroundThread {
        for value in 1...3 {
          try history.write(100 + value, to: minorityURL, from: minority, process: 2)
        }
      }
      let minorityReader = BackgroundThread {
        for _ in 1...3 { try history.read(minorityURL, from: minority, process: 3) }
      }
      let majoritySide = BackgroundThread {
        for value in 4...15 {
          try history.write(value, to: majorityURL, from: client, process: 4)
          try history.read(majorityURL, from: client, process: 5)
        }
      }
      for thread in [minorityWriter, minorityReader, majoritySide] {
        try thread.value(deadline: .seconds(120))
      }
      try lab.heal(minority)
      // Healed, the minority member catches up: a read through it returns the last write.
      let caughtUp = try waitUntil(deadline: .seconds(30)) {
        RegisterHistory.value(of: try history.read(minorityURL, from: minority, process: 6)) == 15
      }
      #expect(caughtUp, "the healed member never served the last write")

      let minorityWrites = history.commands.filter { $0.process == 2 }
      #expect(minorityWrites.count == 3)
      for exit in minorityWrites {
        #expect(
          [69, 75].contains(exit.outcome.status) && !exit.outcome.signaled,
          "a minority write: \(exit.outcome.summary)")
      }
      let majorityWrites = history.commands.filter { $0.process == 4 }
      #expect(majorityWrites.allSatisfy { $0.outcome.succeeded }, "a majority write failed")
      history.expectLinearizable("partition-minority")
      FaultTools.report(
        "partition-minority.minority-write-seconds",
        minorityWrites.map { String(format: "%.2f", $0.seconds) }.joined(separator: ","))
      FaultTools.report("partition-minority.minority-write-exits", minorityWrites.map { String($0.outcome.status) }.joined(separator: ","))
    }
  }

  /// (b) The leader cut off from the majority while 4 hosts make 100 `update { }`
  /// increments each: every increment acknowledged or settled as applied is in the key once,
  /// none twice, and the counter is their number; an update that threw is settled by
  /// reading the key (or reported as unsettled, failing the test).
  @Test func leaderCutOffDuringIncrementsLosesAndDoublesNothing() throws {
    try Self.withCluster { lab, cluster, client in try Self.incrementWithTheLeaderCutOff(lab, cluster, client) }
  }

  /// The body of ``leaderCutOffDuringIncrementsLosesAndDoublesNothing()``.
  static func incrementWithTheLeaderCutOff(_ lab: NetworkLab, _ cluster: EtcdCluster, _ client: NetworkLab.Host) throws {
    let hosts = try [client] + (1...3).map { try lab.addHost("h\($0)") }
    // The leader first: the hosts' connections go to it, and the writes in flight at the
    // cut get no answer.
    let leader = try cluster.leaderIndex()
    let order = [leader] + (0..<3).filter { $0 != leader }
    let url = "etcd://" + order.map { cluster.members[$0].endpoint }.joined(separator: ",") + "/partition/counter"
    let leaderHost = try #require(cluster.members[leader].host)
    let workers = try IncrementHosts.start(in: lab, hosts: hosts, url: url, count: 100)
    #expect(waitUntil(deadline: .seconds(120)) { workers.acknowledged >= 80 }, "no progress before the cut")
    try lab.cut(leaderHost)
    let atCut = workers.acknowledged
    // The majority elects a new leader and the increments go on without the old one.
    let progressed = waitUntil(deadline: .seconds(120)) { workers.acknowledged >= atCut + 120 }
    #expect(progressed, "no progress with the leader cut off: \(workers.acknowledged - atCut) increments")
    try lab.heal(leaderHost)
    let outcomes = workers.wait(deadline: .seconds(180))
    let newLeader = try cluster.leaderIndex()
    FaultTools.report("partition-leader.leaders", "\(leader) then \(newLeader)")
    let document = try cluster.value(of: "partition/counter")
    try workers.expectExactlyOnce("partition-leader", document: document, outcomes: outcomes)
  }

  /// (c) A member cut off while three hosts watch the key, each through a different member
  /// first: every watcher prints every value acknowledged, in order, and reaches the last.
  @Test func watchersThroughACutOffMemberMissNothing() throws {
    try Self.withCluster { lab, cluster, client in try Self.watchThroughACut(lab, cluster, client) }
  }

  /// The body of ``watchersThroughACutOffMemberMissNothing()``.
  static func watchThroughACut(_ lab: NetworkLab, _ cluster: EtcdCluster, _ client: NetworkLab.Host) throws {
    let members = cluster.members
    let ccsync = try ChildProcess.builtExecutable("ccsync")
    let url = cluster.url("partition/watched")
    let history = try RegisterHistory(lab: lab)
    try #require(try history.write(0, to: url, from: client, process: 0).succeeded)
    var watchers: [ChildProcess] = []
    defer { for watcher in watchers { watcher.stop() } }
    for first in members.indices {
      let order = (0..<3).map { members[(first + $0) % 3].endpoint }
      let watched = "etcd://" + order.joined(separator: ",") + "/partition/watched"
      watchers.append(try lab.start(in: try lab.addHost("w\(first)"), ccsync, ["watch", "--timeout", "120", watched, "register"]))
    }
    for watcher in watchers {
      #expect(waitUntil(deadline: .seconds(30)) { Self.printed(by: watcher) == [0] })
    }
    let cutIndex = (try cluster.leaderIndex() + 1) % 3
    let cutHost = try #require(members[cutIndex].host)
    let others = watchers.indices.filter { $0 != cutIndex }.map { watchers[$0] }
    var acknowledged: [Int] = []
    for value in 1...30 {
      if value == 6 { try lab.cut(cutHost) }
      if value == 26 { try lab.heal(cutHost) }
      guard try history.write(value, to: url, from: client, process: 0).succeeded else { continue }
      acknowledged.append(value)
      // Paced by the watchers not behind the cut: each shows the value before the next write.
      let shown = waitUntil(deadline: .seconds(30)) { others.allSatisfy { Self.printed(by: $0).last == value } }
      #expect(shown, "a watcher not behind the cut did not print \(value)")
    }
    let last = try #require(acknowledged.last)
    for (index, watcher) in watchers.enumerated() {
      let reached = waitUntil(deadline: .seconds(60)) { Self.printed(by: watcher).last == last }
      let printed = Self.printed(by: watcher)
      #expect(reached, "watcher \(index) never printed \(last): \(printed)")
      let missing = acknowledged.filter { !printed.contains($0) }
      #expect(missing.isEmpty, "watcher \(index) (first endpoint m\(index), m\(cutIndex) cut off) missed \(missing)")
      #expect(printed == printed.sorted() && Set(printed).count == printed.count, "watcher \(index) out of order: \(printed)")
    }
    FaultTools.report("partition-watch.writes", acknowledged.count)
  }

  /// The values a `ccsync watch ... register` printed so far.
  static func printed(by watcher: ChildProcess) -> [Int] {
    watcher.standardOutput.split(separator: "\n").compactMap { Int($0) }
  }

  /// (d) The leader's link flapping, down and up every 200 ms for 20 s, while two hosts
  /// make increments: no helper hangs (each ends within a bound after the flapping stops),
  /// nothing acknowledged is lost and nothing is applied twice.
  @Test func flappingLinkUnderWritesHangsAndDoublesNothing() throws {
    try Self.withCluster { lab, cluster, client in
      let hosts = [client, try lab.addHost("h1")]
      let url = cluster.url("partition/flapping")
      let leaderHost = try #require(cluster.members[try cluster.leaderIndex()].host)
      let workers = try IncrementHosts.start(in: lab, hosts: hosts, url: url, count: 150)
      #expect(waitUntil(deadline: .seconds(60)) { workers.acknowledged >= 10 }, "no progress before the flapping")
      let end = ContinuousClock.now + .seconds(20)
      var flaps = 0
      while ContinuousClock.now < end {
        try lab.cut(leaderHost)
        ContinuousClock.sleepThread(for: .milliseconds(200))
        try lab.heal(leaderHost)
        ContinuousClock.sleepThread(for: .milliseconds(200))
        flaps += 1
      }
      let outcomes = workers.wait(deadline: .seconds(180))
      #expect(outcomes.allSatisfy { !$0.timedOut }, "a helper hung after the flapping")
      FaultTools.report("partition-flapping.flaps", flaps)
      let document = try cluster.value(of: "partition/flapping")
      try workers.expectExactlyOnce("partition-flapping", document: document, outcomes: outcomes)
    }
  }

  /// (a) A mirror host cut off from every member while it and another mirror host write:
  /// each to a field of its own (10 values each), and both to one shared field. Healed,
  /// both files and the key converge, every acknowledged write to a field of one's own is
  /// there, the shared field holds the key's value (the other mirror's, which reached the
  /// key first), and the conflict is named once, by the mirror that was cut off.
  @Test func mirrorCutOffFromEveryMemberConvergesWhenHealed() throws {
    try Self.withCluster { lab, cluster, client in try Self.mirrorThroughACut(lab, cluster, client) }
  }

  /// The body of ``mirrorCutOffFromEveryMemberConvergesWhenHealed()``.
  static func mirrorThroughACut(_ lab: NetworkLab, _ cluster: EtcdCluster, _ client: NetworkLab.Host) throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let ccsync = try ChildProcess.builtExecutable("ccsync")
    let url = cluster.url("partition/mirrored")
    try #require(try lab.run(in: client, ccsync, ["save", url], input: #"{"a": 0, "b": 0, "shared": "start"}"#).succeeded)
    let hosts = [try lab.addHost("mirror-a"), try lab.addHost("mirror-b")]
    let files = [directory.file("a.json"), directory.file("b.json")]
    var mirrors: [ChildProcess] = []
    defer { for mirror in mirrors { mirror.stop() } }
    for (host, file) in zip(hosts, files) {
      mirrors.append(try lab.start(in: host, ccsync, ["mirror", "--host-name", host.name, file, url]))
    }
    for file in files {
      #expect(waitUntil(deadline: .seconds(30)) { fileValue(file)?.integer("a") == 0 }, "the first sync of \(file)")
    }
    try lab.cut(hosts[0])
    for value in 1...10 {
      for (field, file) in zip(["a", "b"], files) {
        let write = try ChildProcess.run(ccsync, ["set", file, field, String(value)], deadline: .seconds(30))
        #expect(write.succeeded, "\(write.summary)")
      }
    }
    for (side, file) in zip(["from-a", "from-b"], files) {
      #expect(try ChildProcess.run(ccsync, ["set", "--string", file, "shared", side], deadline: .seconds(30)).succeeded)
    }
    // The key has B's writes before A comes back: A's shared value meets a newer key.
    let keyHasB = waitUntil(deadline: .seconds(30)) {
      let key = try? JSONValue(text: cluster.etcdctl(["get", "--print-value-only", "partition/mirrored"]).standardOutput)
      return key?.integer("b") == 10 && key?[field: "shared"]?.stringValue == "from-b"
    }
    #expect(keyHasB, "mirror b's writes did not reach the key")
    // Mirror a finds the cluster unreachable (its pushes get no answer within a call's
    // deadline) and keeps serving its file: the outage, not a blip TCP would hide.
    let noticed = waitUntil(deadline: .seconds(30)) { mirrors[0].standardError.contains("cannot be reached") }
    #expect(noticed, "mirror a never said the cluster cannot be reached: \(mirrors[0].standardError)")
    try lab.heal(hosts[0])
    let expected = try JSONValue(text: #"{"a": 10, "b": 10, "shared": "from-b"}"#)
    let converged = waitUntil(deadline: .seconds(60)) {
      let key = try? JSONValue(text: cluster.etcdctl(["get", "--print-value-only", "partition/mirrored"]).standardOutput)
      return key == expected && files.allSatisfy { fileValue($0) == expected }
    }
    let key = try cluster.etcdctl(["get", "--print-value-only", "partition/mirrored"]).standardOutput
    #expect(converged, "not converged: key \(key), files \(files.map { fileValue($0).map { "\($0)" } ?? "none" })")
    let outcomes = mirrors.map { mirror -> ChildProcess.Outcome in
      kill(mirror.process.processIdentifier, SIGTERM)
      return mirror.wait(deadline: .seconds(20))
    }
    let conflicts = outcomes.map { $0.standardError.components(separatedBy: "changed on both sides").count - 1 }
    #expect(conflicts == [1, 0], "conflict lines, a and b: \(conflicts); a said: \(outcomes[0].standardError)")
    #expect(outcomes[0].standardError.contains("in sync again"), "mirror a: \(outcomes[0].standardError)")
    for (index, outcome) in outcomes.enumerated() { #expect(outcome.status == 0, "mirror \(index): \(outcome.summary)") }
  }

  /// Runs `body` with a lab, three members in it and a client host, all removed afterwards
  /// whatever `body` does.
  static func withCluster(_ body: (NetworkLab, EtcdCluster, NetworkLab.Host) throws -> Void) throws {
    let lab = try NetworkLab()
    defer { lab.shutdown() }
    let cluster = try EtcdCluster(members: 3, heartbeat: heartbeat, election: election, lab: lab)
    defer { cluster.shutdown() }
    try body(lab, cluster, try lab.addHost("client"))
  }
}
