import Foundation
import Testing
@testable import CCSyncEtcd
import CCSyncSystem

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
    }
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
