import Foundation
import Testing
@testable import CCSync

extension CLIEtcdTests {
  /// Three mirror "machines" of one key, each under its own host name: one refuses a
  /// version with its check; `status` names each host's answer, `--wait-hosts` waits for
  /// them, a killed mirror's host disappears within its status TTL, and a second mirror under
  /// a live host's name is refused.
  @Suite struct Fleet {
    @Test func statusWaitHostsAndARefusingHost() throws {
      try withEtcd { cluster, directory in
        let url = cluster.url("cfg/app")
        #expect(try CLI.run(["set", url, "port", "1"]).status == 0)
        var mirrors: [MirrorProcess] = []
        for name in ["a", "b", "c"] {
          try FileManager.default.createDirectory(atPath: directory.file(name), withIntermediateDirectories: false)
          var extra = ["--host-name", name, "--status-ttl", "2"]
          if name == "b" { extra += ["--check", "! grep -q 666"] }
          let mirror = try MirrorProcess(extra + [directory.file("\(name)/app.json"), url], in: directory)
          #expect(mirror.waitUntilReady(), "\(name): \(mirror.standardError)")
          mirrors.append(mirror)
        }
        defer { for mirror in mirrors { _ = mirror.terminate() } }
        #expect(waitUntil { (try? CLI.run(["status", url]))?.standardOutput.contains("3 of 3 hosts at revision") == true })

        // Every host applies a good write; --wait-hosts all returns once the last did.
        let good = try CLI.run(["set", "--wait-hosts", "all", "--timeout", "20", url, "port", "2"])
        #expect(good.status == 0, "\(good.summary)")
        for name in ["a", "b", "c"] {
          #expect(fileValue(directory.file("\(name)/app.json"))?.integer("port") == 2, "\(name) after --wait-hosts")
        }

        // b's check refuses 666: b's file keeps 2, b says so, the writer hears it.
        let refused = try CLI.run(["set", "--wait-hosts", "all", "--timeout", "20", url, "port", "666"])
        #expect(refused.status == 1, "\(refused.summary)")
        #expect(refused.standardError.contains("landed") && refused.standardError.contains("b ("), "\(refused.summary)")
        #expect(fileValue(directory.file("b/app.json"))?.integer("port") == 2)
        #expect(mirrors[1].errorLines(containing: "refused it").count == 1, "\(mirrors[1].standardError)")
        let status = try CLI.run(["status", url])
        #expect(status.status == 0)
        let lines = CLI.lines(status.standardOutput).filter { !$0.isEmpty }
        #expect(lines.count == 4, "\(status.summary)")
        #expect(lines.contains { $0.hasPrefix("b\t") && $0.contains("\trejected\t") }, "\(lines)")
        #expect(lines.last?.hasPrefix("2 of 3 hosts at revision") == true && lines.last?.contains("b rejected it") == true, "\(lines)")

        // The next good write reaches b.
        #expect(try CLI.run(["set", "--wait-hosts", "all", "--timeout", "20", url, "port", "3"]).status == 0)
        #expect(fileValue(directory.file("b/app.json"))?.integer("port") == 3)

        // A second mirror under a live host's name is refused at start.
        let twin = try CLI.run(["mirror", "--host-name", "a", directory.file("twin.json"), url], deadline: .seconds(20))
        #expect(twin.status == 1 && twin.standardError.contains("held by another live mirror"), "\(twin.summary)")

        // c is killed: it disappears within its TTL of 2 s.
        mirrors[2].kill()
        #expect(waitUntil(deadline: .seconds(15)) {
          (try? CLI.run(["status", url]))?.standardOutput.contains("of 2 hosts") == true
        }, "c still reported")

        expectUsageError(try CLI.run(["mirror", "--host-name", "x/y", directory.file("n.json"), url]), command: "mirror", token: "x/y")
        try cluster.put("cfg/app.ccsync-status/zz", "not a status")
        let foreign = try CLI.run(["status", url])
        #expect(foreign.status == 0 && foreign.standardError.contains("ignoring 'cfg/app.ccsync-status/zz'"), "\(foreign.summary)")
      }
    }

    @Test func noHostReporting() throws {
      try withEtcd { cluster, _ in
        let url = cluster.url("cfg/alone")
        #expect(try CLI.run(["set", url, "a", "1"]).status == 0)
        let outcome = try CLI.run(["status", url])
        #expect(outcome.status == 0 && outcome.standardOutput == "no host reports its status\n", "\(outcome.summary)")
      }
    }
  }
}
