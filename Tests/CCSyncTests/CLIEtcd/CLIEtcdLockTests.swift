import Foundation
import Testing

extension CLIEtcdTests {
  /// `ccsync lock etcd://.../NAME`: etcd's own lock, shared with `etcdctl lock NAME`, its
  /// lease kept alive, its loss stopping the command, its revision a fencing token.
  @Suite struct Lock {
    /// `etcdctl lock NAME` (no command: it prints its key and holds until SIGTERM).
    private func etcdctlHolder(_ cluster: EtcdCluster, _ name: String) throws -> ChildProcess {
      let holder = try cluster.startEtcdctl(["lock", name])
      #expect(waitUntil { holder.standardOutput.hasPrefix(name + "/") }, "etcdctl did not take the lock: \(holder.standardError)")
      return holder
    }

    @Test func etcdctlsLockAndOursExcludeEachOther() throws {
      try withEtcd { cluster, directory in
        let url = cluster.url("jobs/nightly")
        let marker = directory.file("ran")

        let holder = try etcdctlHolder(cluster, "jobs/nightly")
        let holderKey = CLI.lines(holder.standardOutput)[0]
        let refused = try CLI.run(["lock", "-n", url, "--", "touch", marker])
        #expect(refused.status == 1, "\(refused.summary)")
        #expect(refused.standardError == "ccsync: '\(url)' is locked by another holder (lock key '\(holderKey)')\n", "\(refused.summary)")
        #expect(try CLI.run(["lock", "--nonblock", "-E", "42", url, "--", "touch", marker]).status == 42)
        let (timedOut, seconds) = try timed { try CLI.run(["lock", "-w", "0.3", url, "--", "touch", marker]) }
        #expect(timedOut.status == 1 && timedOut.standardError.contains(holderKey), "\(timedOut.summary)")
        #expect(seconds < 4, "-w 0.3 took \(seconds) s")
        #expect(!FileManager.default.fileExists(atPath: marker))
        #expect(try cluster.keys(prefix: "jobs/nightly/") == [holderKey], "the attempts left no key behind")
        #expect(try cluster.leases().count == 1, "the attempts' leases were revoked")

        // ccsync waits for etcdctl's release, then holds the lock; etcdctl waits for ccsync.
        let ready = directory.file("ready"), done = directory.file("done")
        let ours = try CLI.start(["lock", url, "--", "sh", "-c", "touch '\(ready)'; while [ ! -e '\(done)' ]; do sleep 0.02; done"])
        #expect(waitUntil { (try? cluster.keys(prefix: "jobs/nightly/").count) == 2 }, "ccsync is waiting")
        #expect(!FileManager.default.fileExists(atPath: ready))
        kill(holder.process.processIdentifier, SIGTERM)
        _ = holder.wait(deadline: .seconds(10))
        #expect(waitUntil { FileManager.default.fileExists(atPath: ready) }, "ccsync took the lock once etcdctl released it")

        let waiter = try cluster.startEtcdctl(["lock", "jobs/nightly"])
        defer { waiter.stop() }
        #expect(waitUntil { (try? cluster.keys(prefix: "jobs/nightly/").count) == 2 }, "etcdctl is waiting")
        #expect(waiter.standardOutput == "", "etcdctl took the lock ccsync holds")
        try CLI.write("", to: done)
        let outcome = ours.wait(deadline: .seconds(10))
        #expect(outcome.status == 0, "\(outcome.summary)")
        #expect(waitUntil { waiter.standardOutput.hasPrefix("jobs/nightly/") }, "etcdctl took the lock once ccsync released it")
      }
    }

    @Test func theCommandGetsARevisionThatGrowsWithEveryGrant() throws {
      try withEtcd { cluster, _ in
        let url = cluster.url("deploy")
        var revisions: [Int64] = []
        for options in [[], ["-n"], ["-w", "5"]] {
          let outcome = try CLI.run(["lock"] + options + [url, "--", "sh", "-c", "echo $CCSYNC_LOCK_REVISION"])
          #expect(outcome.status == 0, "\(options): \(outcome.summary)")
          revisions.append(Int64(outcome.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1)
        }
        #expect(revisions[0] > 0 && revisions[0] < revisions[1] && revisions[1] < revisions[2], "\(revisions)")
        // Its status passes through; 126 and 127 as for a file; nothing is left behind.
        #expect(try CLI.run(["lock", url, "--", "sh", "-c", "exit 7"]).status == 7)
        let notFound = try CLI.run(["lock", url, "--", "no-such-command-ccsync"])
        #expect(notFound.status == 127 && notFound.standardError.contains("no-such-command-ccsync"), "\(notFound.summary)")
        #expect(try cluster.keys(prefix: "deploy/") == [])
        #expect(try cluster.leases() == [])
      }
    }

    /// The lease outlives its time to live while it is renewed.
    @Test func theLeaseIsKeptAliveWhileTheCommandRuns() throws {
      try withEtcd { cluster, _ in
        let (outcome, seconds) = try timed { try CLI.run(["lock", "--ttl", "1", cluster.url("slow"), "--", "sleep", "2.5"]) }
        #expect(outcome.status == 0 && outcome.standardError == "", "\(outcome.summary)")
        #expect(seconds >= 2.5)
        #expect(try cluster.leases() == [], "released")
      }
    }

    /// An operator revokes the lease: another holder may have the lock now, so the command is
    /// stopped (SIGTERM) and the status is 75, naming the lease.
    @Test func aRevokedLeaseStopsTheCommandWith75() throws {
      try withEtcd { cluster, directory in
        let ready = directory.file("ready"), stopped = directory.file("stopped")
        let ours = try CLI.start([
          "lock", cluster.url("jobs/x"), "--", "sh", "-c",
          "trap 'touch \(stopped); exit 3' TERM; touch '\(ready)'; while :; do sleep 0.02; done",
        ])
        #expect(waitUntil { FileManager.default.fileExists(atPath: ready) })
        let leases = try cluster.leases()
        #expect(leases.count == 1)
        let lease = try #require(leases.first)
        #expect(try cluster.etcdctl(["lease", "revoke", lease]).status == 0)
        let (outcome, seconds) = timed { ours.wait(deadline: .seconds(15)) }
        #expect(outcome.status == 75 && !outcome.signaled, "\(outcome.summary)")
        #expect(outcome.standardError.contains("lease \(lease)") && outcome.standardError.contains("mutual exclusion is gone"), "\(outcome.summary)")
        #expect(FileManager.default.fileExists(atPath: stopped), "the command got SIGTERM")
        #expect(seconds < 5, "noticed after \(seconds) s")
      }
    }

    /// Cut off from the cluster (its only member frozen), the lease cannot be renewed; once
    /// it would have expired the command is stopped: 75.
    @Test func aLeaseThatCannotBeRenewedStopsTheCommand() throws {
      try withEtcd { cluster, directory in
        let ready = directory.file("ready")
        let ours = try CLI.start(["lock", "--ttl", "1", cluster.url("jobs/y"), "--", "sh", "-c", "touch '\(ready)'; exec sleep 30"])
        #expect(waitUntil { FileManager.default.fileExists(atPath: ready) })
        try cluster.freeze(0)
        defer { try? cluster.thaw(0) }
        let outcome = ours.wait(deadline: .seconds(20))
        #expect(outcome.status == 75 && !outcome.timedOut, "\(outcome.summary)")
        #expect(outcome.standardError.contains("not renewed within its time to live of"), "\(outcome.summary)")
      }
    }

    /// SIGTERM while waiting for the lock: the waiter's lease is revoked (its key goes at
    /// once, not after the TTL) and ccsync ends by the signal. While holding it: passed on.
    @Test func signalsWhileWaitingAndWhileHolding() throws {
      try withEtcd { cluster, directory in
        let holder = try etcdctlHolder(cluster, "q")
        defer { holder.stop() }
        let waiting = try CLI.start(["lock", cluster.url("q"), "--", "true"])
        #expect(waitUntil { (try? cluster.keys(prefix: "q/").count) == 2 })
        kill(waiting.process.processIdentifier, SIGTERM)
        let outcome = waiting.wait(deadline: .seconds(10))
        #expect(outcome.signaled && outcome.status == SIGTERM, "\(outcome.summary)")
        #expect(try cluster.keys(prefix: "q/").count == 1, "the waiter's key is gone")
        kill(holder.process.processIdentifier, SIGTERM)
        _ = holder.wait(deadline: .seconds(10))

        let ready = directory.file("ready")
        let held = try CLI.start(["lock", cluster.url("q"), "--", "sh", "-c", "trap 'exit 9' TERM; touch '\(ready)'; while :; do sleep 0.02; done"])
        #expect(waitUntil { FileManager.default.fileExists(atPath: ready) })
        kill(held.process.processIdentifier, SIGTERM)
        let status = held.wait(deadline: .seconds(10))
        #expect(status.status == 9 && !status.signaled, "\(status.summary)")
        #expect(try cluster.keys(prefix: "q/") == [])
      }
    }
  }
}
