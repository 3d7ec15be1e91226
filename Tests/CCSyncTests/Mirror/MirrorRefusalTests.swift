import Foundation
import Testing
import CCSyncJSON

extension EtcdTests {
  /// A mirror the cluster refuses (credentials, permission, TLS): misconfigured from its first
  /// start it exits 77 with the reason, as every other command does; refused after it was in
  /// sync it reports it once and keeps trying (docs/CLI.md, "ccsync mirror").
  @Suite struct MirrorRefusal {
    @Test func aWrongPasswordAtFirstStartExits77NamingTheKeyAndTheRefusal() throws {
      try withAuthenticatedEtcd { cluster, directory in
        let file = directory.file("cfg.json")
        try CLI.write("{\"a\": 1}\n", to: file)
        let url = cluster.url("cfg/app")
        let mirror = try MirrorProcess([file, url], in: directory, environment: ["ETCDCTL_USER": "app:wrong"])
        let outcome = mirror.child.wait(deadline: .seconds(20))
        #expect(outcome.status == 77, "\(outcome.summary)")
        let lines = CLI.lines(outcome.standardError)
        #expect(lines.count == 1, "\(outcome.summary)")
        #expect(lines.first?.hasPrefix("ccsync: mirror '\(file)' <-> '\(url)': the cluster refused") == true, "\(outcome.summary)")
        #expect(outcome.standardError.contains("authentication failed"), "\(outcome.summary)")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "{\"a\": 1}\n", "the file is left as it was")
        // The same mirror with the right password starts and syncs.
        let right = try MirrorProcess([file, url], in: directory, environment: ["ETCDCTL_USER": "app:right"])
        #expect(right.waitUntilReady(), "\(right.standardError)")
        #expect(try waitUntil { try cluster.value("cfg/app", user: "root:secret").flatMap { try? JSONValue(parsing: Array($0.utf8)) } == fileValue(file) })
        #expect(right.terminate().status == 0)
      }
    }

    /// Only a refusal is fatal at start: a cluster that is not there yet is waited for.
    @Test func anUnreachableClusterAtStartIsNotARefusal() throws {
      try withTemporaryDirectory { directory in
        let port = try EtcdCluster.freePorts(1)[0]
        let file = directory.file("cfg.json")
        try CLI.write("{\"a\": 1}\n", to: file)
        let mirror = try MirrorProcess([file, "etcd://127.0.0.1:\(port)/cfg/app"], in: directory)
        #expect(mirror.waitUntilReady(), "\(mirror.standardError)")
        #expect(waitUntil { mirror.errorLines(containing: "cannot be reached").count == 1 }, "\(mirror.standardError)")
        #expect(mirror.child.isRunning, "\(mirror.standardError)")
        #expect(mirror.terminate().status == 0)
      }
    }

    @Test func aRefusalAfterBeingInSyncIsReportedOnceAndRetried() throws {
      try withAuthenticatedEtcd { cluster, directory in
        let file = directory.file("cfg.json")
        try CLI.write("{\"a\": 1}\n", to: file)
        let url = cluster.url("cfg/app")
        let mirror = try MirrorProcess([file, url], in: directory, environment: ["ETCDCTL_USER": "app:right"])
        defer { mirror.terminate() }
        #expect(mirror.waitUntilReady(), "\(mirror.standardError)")
        #expect(try waitUntil { try cluster.value("cfg/app", user: "root:secret") != nil })
        // The user loses its permission (a changed policy), then the file changes.
        let revoke = try cluster.etcdctl(["--user=root:secret", "user", "revoke-role", "app", "app-role"])
        #expect(revoke.status == 0, "\(revoke.summary)")
        try CLI.write("{\"a\": 2}\n", to: file)
        let refusal = "permission denied"
        let reports = { mirror.errorLines(containing: "mirror '\(file)'").filter { $0.contains(refusal) } }
        #expect(waitUntil(deadline: .seconds(20)) { reports().count == 1 }, "\(mirror.standardError)")
        // Retried every second, said once: still one report after several retries.
        #expect(!waitUntil(deadline: .seconds(3)) { reports().count > 1 || !mirror.child.isRunning }, "\(mirror.standardError)")
        #expect(mirror.child.isRunning, "\(mirror.standardError)")
        // Permission back: the retry pushes the edit, and the mirror says it is in sync again.
        let grant = try cluster.etcdctl(["--user=root:secret", "user", "grant-role", "app", "app-role"])
        #expect(grant.status == 0, "\(grant.summary)")
        #expect(try waitUntil(deadline: .seconds(20)) {
          try cluster.value("cfg/app", user: "root:secret").flatMap { try? JSONValue(parsing: Array($0.utf8)) } == fileValue(file)
        }, "\(mirror.standardError)")
        #expect(waitUntil { mirror.errorLines(containing: "in sync again").count == 1 }, "\(mirror.standardError)")
      }
    }
  }
}
