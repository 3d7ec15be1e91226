import Foundation
import Testing

extension CLIEtcdTests {
  /// `ccsync watch etcd://...` with authentication on: a member that restarts forgets every
  /// token (simple tokens live in its memory), and the watch must authenticate again rather
  /// than wait for ever; a user who may not read the key any more ends the watch with 77.
  @Suite struct WatchAuthentication {
    /// etcd 3.4 refuses the forgotten token of a new watch as `invalid auth token`; 3.5.1
    /// answers `created` and `canceled` with "permission denied" and keeps the stream open,
    /// which the watch took for a refusal and retried with the same token for ever.
    @Test func aWatchResumesAfterTheMemberRestartsAndForgetsItsToken() throws {
      try withAuthenticatedEtcd { cluster, _ in
        try cluster.put("cfg/app", #"{"a": 1}"#, user: "root:secret")
        let url = cluster.url("cfg/app")
        let watch = try CLI.start(["watch", "--count", "2", "--timeout", "30", url, "a"], environment: CLI.environment(["ETCDCTL_USER": "app:right"]))
        defer { watch.stop() }
        #expect(waitUntil { watch.standardOutput == "1\n" }, "\(watch.standardOutput)\(watch.standardError)")
        try cluster.stop(0)
        try cluster.restart(0)
        // Written after the restart, by another user: only the watch can bring it.
        try cluster.put("cfg/app", #"{"a": 2}"#, user: "root:secret")
        let outcome = watch.wait(deadline: .seconds(40))
        #expect(outcome.status == 0, "\(outcome.summary)")
        #expect(outcome.standardOutput == "1\n2\n", "\(outcome.summary)")
      }
    }

    /// The user loses its permission while the watch runs; the member restarts, so the watch
    /// must be created again, and that is refused with a fresh token too: the watch ends
    /// with 77 and a line naming the key and the refusal.
    @Test func aWatchRefusedForPermissionExits77NamingTheKey() throws {
      try withAuthenticatedEtcd { cluster, _ in
        try cluster.put("cfg/app", #"{"a": 1}"#, user: "root:secret")
        let url = cluster.url("cfg/app")
        let watch = try CLI.start(["watch", "--timeout", "60", url, "a"], environment: CLI.environment(["ETCDCTL_USER": "app:right"]))
        defer { watch.stop() }
        #expect(waitUntil { watch.standardOutput == "1\n" }, "\(watch.standardOutput)\(watch.standardError)")
        let revoke = try cluster.etcdctl(["--user=root:secret", "user", "revoke-role", "app", "app-role"])
        #expect(revoke.status == 0, "\(revoke.summary)")
        try cluster.stop(0)
        try cluster.restart(0)
        let outcome = watch.wait(deadline: .seconds(40))
        #expect(outcome.status == 77, "\(outcome.summary)")
        #expect(outcome.standardOutput == "1\n", "\(outcome.summary)")
        let lines = CLI.lines(outcome.standardError)
        #expect(lines.last?.hasPrefix("ccsync: '\(url)'") == true, "\(outcome.summary)")
        #expect(lines.last?.contains("permission denied") == true, "\(outcome.summary)")
      }
    }
  }
}
