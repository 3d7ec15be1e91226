import Foundation
import Testing

/// `ccsync demo cluster`: three etcd members, three machines with mirrors, watchers and
/// writers; it converges, survives the leader's death, and leaves nothing running.
@Suite(.serialized) struct DemoClusterTests {
  @Test(.enabled(if: EtcdCluster.isInstalled, EtcdCluster.absentMessage))
  func theClusterDemoConvergesSurvivesTheLeaderAndCleansUp() throws {
    let clock = ContinuousClock()
    let start = clock.now
    // The demo finds etcd on PATH: the one under test first.
    let outcome = try CLI.run(["demo", "cluster"], environment: EtcdInstallation.chosen.environment(), deadline: .seconds(60))
    #expect(outcome.status == 0, "\(outcome.summary)")
    #expect(clock.now - start < .seconds(30), "about 15 s at most, with room for a loaded machine")
    #expect(outcome.standardOutput.contains("all three files hold the same document"))
    let kept = outcome.standardOutput.components(separatedBy: "no machine lost another's field").count - 1
    #expect(kept == 2, "both rounds of writes reached every machine:\n\(outcome.standardOutput)")
    #expect(outcome.standardOutput.contains("the leader (pid"))
    #expect(try demoMembersRunning().isEmpty, "the demo stopped every member it started")
  }

  @Test func withoutEtcdItSaysHowToInstallItAndExits69() throws {
    let outcome = try CLI.run(["demo", "cluster"], environment: CLI.environment(["PATH": "/nonexistent"]))
    #expect(outcome.status == 69, "\(outcome.summary)")
    #expect(outcome.standardOutput.contains("apt-get install etcd-server"))
  }

  @Test func anUnknownDemoIsAUsageError() throws {
    let outcome = try CLI.run(["demo", "galaxy"])
    #expect(outcome.status == 64, "\(outcome.summary)")
    #expect(outcome.standardError.contains("'galaxy'"))
  }

  /// The PIDs of running processes started with a data directory in a demo's temporary
  /// directory (`ccsync-demo-XXXXXX`): the demo's etcd members, mirrors and watchers.
  private func demoMembersRunning() throws -> [Int32] {
    var pids: [Int32] = []
    for entry in try FileManager.default.contentsOfDirectory(atPath: "/proc") {
      guard let pid = Int32(entry), let command = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { continue }
      if String(decoding: command, as: UTF8.self).contains("/ccsync-demo-") { pids.append(pid) }
    }
    return pids
  }
}
