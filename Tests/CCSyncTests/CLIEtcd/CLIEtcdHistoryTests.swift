import Foundation
import Testing

extension CLIEtcdTests {
  /// An etcd key's history is its revisions, each signed by the stamp its writer put beside
  /// it: `log` names the authors, `rollback` restores one after other hosts wrote.
  @Suite struct History {
    @Test func logAndRollbackOverEtcdAfterOtherWriters() throws {
      try withEtcd { cluster, _ in
        let url = cluster.url("cfg/app")
        #expect(try CLI.run(["set", url, "port", "8080"]).status == 0)
        let first = try CLI.run(["log", url])
        let firstID = try #require(CLI.lines(first.standardOutput).first?.split(separator: "\t").first.map(String.init))
        // Three other "hosts" write, one of them etcdctl (no author).
        #expect(try CLI.run(["set", url, "port", "9090"]).status == 0)
        #expect(try CLI.run(["set", url, "host", "a"]).status == 0)
        try cluster.put("cfg/app", #"{"port": 1, "host": "b"}"#)
        let lines = CLI.lines(try CLI.run(["log", url]).standardOutput).map { $0.split(separator: "\t").map(String.init) }
        #expect(lines.count == 4, "\(lines)")
        #expect(lines.first?[2] == "-", "etcdctl's write has no author: \(lines)")
        #expect(lines.dropFirst().allSatisfy { $0[2].contains("(ccsync)") }, "\(lines)")
        #expect(try CLI.run(["rollback", url, "--to", firstID]).status == 0)
        #expect(try cluster.value("cfg/app") == "{\n  \"port\": 8080\n}\n")
        let after = CLI.lines(try CLI.run(["log", "-n", "1", url]).standardOutput)
        #expect(after.count == 1 && after[0].hasSuffix("(rollback of \(firstID))"), "\(after)")
        let diff = try CLI.run(["diff", url, firstID])
        #expect(diff.status == 0 && diff.standardOutput == "", "\(diff.summary)")
        let never = try CLI.run(["rollback", url, "--to", "999999"])
        #expect(never.status == 66, "\(never.summary)")
      }
    }
  }
}
