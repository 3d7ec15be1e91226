import Foundation
import Testing
@testable import CCSync
@testable import CCSyncEtcd
import CCSyncSystem

extension EtcdTests {
  /// The library's etcd lock (``EtcdLocker``, ``HeldEtcdLock``, ``LeaseKeeper``) against real
  /// members: the loss notice when the lease is revoked or expires, fencing tokens that grow
  /// from holder to holder, and the `async` take, cancelled or contended.
  @Suite struct Locker {
    private func location(_ cluster: EtcdCluster, _ name: String) -> EtcdLocation {
      EtcdLocation(endpoints: cluster.endpoints, key: name)
    }

    /// Starts a `lock-holder` helper process and waits for its `ready`.
    private func lockHolder() throws -> InteractiveChild {
      let child = try InteractiveChild(testHelper(), ["lock-holder"])
      #expect(child.nextLine(startingWith: "ready") != nil, "the helper did not start: \(child.standardError)")
      return child
    }

    /// `held KEY TOKEN LEASE` split into its fields.
    private func grant(_ line: String?) -> (key: String, token: Int64, lease: String)? {
      guard let fields = line?.split(separator: " "), fields.count == 4, fields[0] == "held", let token = Int64(fields[2]) else { return nil }
      return (String(fields[1]), token, String(fields[3]))
    }

    /// A holder process whose lease is revoked (etcdctl, as an operator would) gets the loss
    /// notice; the next holder, another process, gets a greater fencing token.
    @Test func aRevokedLeaseGivesItsHolderTheLossNoticeAndTheNextTokenIsGreater() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let url = cluster.url("jobs/lock")
      let first = try lockHolder(), second = try lockHolder()
      let held = try #require(grant(first.request("etcd \(url) 30 forever", reply: "")), "\(first.standardError)")
      #expect(held.key.hasPrefix("jobs/lock/"))
      #expect(second.request("etcd \(url) 30 nonblock", reply: "") == "unavailable \(held.key)")
      #expect(try cluster.keys(prefix: "jobs/lock/") == [held.key], "the refused attempt left nothing")

      second.send("etcd \(url) 30 forever")
      #expect(waitUntil { (try? cluster.keys(prefix: "jobs/lock/").count) == 2 }, "the second process waits")
      let revoked = try cluster.etcdctl(["lease", "revoke", held.lease])
      #expect(revoked.status == 0, "\(revoked.summary)")
      let lost = first.nextLine(startingWith: "lost ")
      #expect(lost?.contains("revoked or expired") == true || lost?.contains("was deleted") == true, "\(String(describing: lost))")
      let next = try #require(grant(second.nextLine(startingWith: "held")), "\(second.standardError)")
      #expect(next.token > held.token, "fencing tokens grow: \(held.token) then \(next.token)")
      #expect(second.request("release", reply: "released") != nil)
      #expect(waitUntil { (try? cluster.keys(prefix: "jobs/lock/")) == [] }, "released: the key is gone")
    }

    /// A holder cut off from its only member (frozen) cannot renew its lease: the loss notice
    /// comes, through the `AsyncStream` too, before the lease would have expired on the
    /// member's side; a released lock's stream ends with nothing.
    @Test func aLeaseThatCannotBeRenewedEndsInTheLossNotice() async throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let locker = try EtcdLocker(location: location(cluster, "cut-off"), ttl: 2, logger: .silent)
      let released = try locker.acquire()
      released.release()
      let ended = await collect(released.lease.losses, within: .seconds(10))
      #expect(ended == .some([]), "a released lock's stream ends with nothing: \(String(describing: ended))")

      let held = try locker.acquire(wait: .timeout(.seconds(5)))
      let notified = Protected<String?>(nil)
      held.lease.onLoss { reason in notified.withLock { $0 = reason } }
      try cluster.freeze(0)
      defer { try? cluster.thaw(0) }
      let reasons = try #require(await collect(held.lease.losses, within: .seconds(20)), "no loss notice within 20 s")
      #expect(reasons.count == 1 && reasons[0].contains("not renewed within its time to live of 2 s"), "\(reasons)")
      #expect(notified.withLock { $0 } == reasons.first)
      #expect(held.lostReason == reasons.first)
      try cluster.thaw(0)
      held.release()
    }

    /// A task awaiting the lock etcdctl holds is cancelled: it throws `CancellationError`, its
    /// waiting key and lease are gone, and once etcdctl lets go nothing of it takes the lock.
    @Test func aCancelledAsyncWaitThrowsAndNeverHoldsTheLock() async throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let holder = try cluster.startEtcdctl(["lock", "deploy"])
      defer { _ = holder.stop() }
      #expect(waitUntil { holder.standardOutput.hasPrefix("deploy/") }, "etcdctl did not take the lock: \(holder.standardError)")
      let locker = try EtcdLocker(location: location(cluster, "deploy"), logger: .silent)

      let waiter = Task { try await locker.acquireAsync() }
      #expect(await waitUntilAsync { (try? cluster.keys(prefix: "deploy/").count) == 2 }, "the task waits on the lock service")
      waiter.cancel()
      let outcome = await waiter.result
      #expect(throws: CancellationError.self) { try outcome.get() }
      #expect(waitUntil { (try? cluster.keys(prefix: "deploy/").count) == 1 }, "the cancelled waiter's key is gone")
      #expect(waitUntil { (try? cluster.leases().count) == 1 }, "the cancelled waiter's lease is revoked")

      kill(holder.process.processIdentifier, SIGTERM)
      _ = holder.wait(deadline: .seconds(10))
      #expect(waitUntil { (try? cluster.keys(prefix: "deploy/")) == [] }, "nobody holds the lock")
      let mine = try await locker.acquireAsync(wait: .nonBlocking)
      #expect(try cluster.keys(prefix: "deploy/") == [mine.key])
      mine.release()
    }

    /// While 64 tasks await the lock etcdctl holds, a task sleeping 10 ms twenty times
    /// finishes first; then etcdctl lets go and every task gets the lock in turn, each with a
    /// fencing token greater than the one before.
    @Test func aSleepingTaskKeepsRunningWhile64TasksAwaitTheLock() async throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let holder = try cluster.startEtcdctl(["lock", "batch"])
      defer { _ = holder.stop() }
      #expect(waitUntil { holder.standardOutput.hasPrefix("batch/") }, "etcdctl did not take the lock: \(holder.standardError)")
      let holding = holder.process.processIdentifier
      let release = OnceAction { kill(holding, SIGTERM) }
      release.run(after: .seconds(10))
      let locker = try EtcdLocker(location: location(cluster, "batch"), logger: .silent)
      let tokens = Protected<[Int64]>([])

      let run = await ContendedRun.measure(updates: 64, whenSlept: release.run) {
        let held = try await locker.acquireAsync()
        tokens.withLock { $0.append(held.fencingToken) }
        held.release()
      }

      #expect(run.failures.isEmpty, "\(run.failures)")
      #expect(run.updateEnds.count == 64)
      let firstLock = try #require(run.updateEnds.min())
      #expect(run.sleeperEnd < firstLock, "the sleeper finished only after a task got the lock: the pool was held")
      let granted = tokens.withLock { $0 }
      #expect(granted == granted.sorted() && Set(granted).count == granted.count, "fencing tokens grow: \(granted)")
      #expect(BlockingWorkPool.shared.peakBusyThreads <= 4)
    }

    /// The mirror's fleet status keeps its lease with the same keeper: revoked, the status key
    /// goes with it, and the reporter grants a new lease and puts its last report back.
    @Test func theFleetStatusPutsItsReportBackUnderANewLeaseWhenItsLeaseIsLost() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let location = location(cluster, "cfg/app")
      let reporter = try FleetStatusReporter(location: location, host: "host-a", ttl: 3, logger: .silent)
      defer { reporter.stop() }
      try reporter.claim()
      reporter.report(.applied, revision: 7)
      let client = try cluster.client()
      let statusKey = Array((HostStatus.prefix(of: "cfg/app") + "host-a").utf8)
      // Reports are sent off the caller's thread: the first arrives soon after.
      var sent: EtcdKeyValue?
      #expect(waitUntil(deadline: .seconds(10)) {
        sent = try? client.get(statusKey).keyValue
        return sent != nil
      })
      let first = try #require(sent, "the first report")
      #expect(first.lease != 0)

      try client.revokeLease(first.lease)
      #expect(try client.get(statusKey).keyValue == nil, "revoking the lease took the status key")
      var back: EtcdKeyValue?
      #expect(waitUntil(deadline: .seconds(15)) {
        back = try? client.get(statusKey).keyValue
        return back != nil
      }, "the report was put back")
      #expect(back.map { $0.lease != 0 && $0.lease != first.lease } == true, "under a new lease")
      #expect(back.flatMap { HostStatus(bytes: $0.value) }?.revision == 7)
      reporter.stop()
      #expect(try client.get(statusKey).keyValue == nil, "stopping revokes the new lease")
    }

    /// A report still being sent when the mirror stops crosses the revoke of its lease: that
    /// is the host leaving, not a failure to report, and nothing is logged (a mirror ended by
    /// SIGTERM right after a sync says nothing).
    @Test func aReportCrossingTheStopIsNotAWarning() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let location = location(cluster, "cfg/app")
      let warnings = Protected<[String]>([])
      let logger = DiagnosticLog(minimumLevel: .warning) { _, message in warnings.withLock { $0.append(message) } }
      let client = try cluster.client()
      let statusKey = Array((HostStatus.prefix(of: "cfg/app") + "host-a").utf8)
      // The put and the revoke race; enough rounds that the revoke wins some of them.
      for round in 1...40 {
        let reporter = try FleetStatusReporter(location: location, host: "host-a", ttl: 5, logger: logger)
        try reporter.claim()
        reporter.report(.applied, revision: Int64(round))
        reporter.stop()
        #expect(try client.get(statusKey).keyValue == nil, "stopping takes the status key (round \(round))")
      }
      #expect(warnings.withLock { $0 } == [], "a report crossing the stop is not a warning")
    }

    /// A report whose put fails (the cluster down) is not dropped: it is tried again, after 1 s
    /// and then at doubling waits, until it lands or a newer one replaces it, so a host that
    /// applied a version is not shown behind until its next sync. The failure is said once,
    /// not at every retry.
    @Test func aReportThatCannotBePutIsTriedAgainUntilItLands() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let location = location(cluster, "cfg/app")
      let lines = Protected<[(level: DiagnosticLog.Level, message: String)]>([])
      let logger = DiagnosticLog(minimumLevel: .debug) { level, message in lines.withLock { $0.append((level, message)) } }
      func said(_ level: DiagnosticLog.Level) -> [String] {
        lines.withLock { $0.filter { $0.level == level && $0.message.contains("cannot report the status") }.map(\.message) }
      }
      let reporter = try FleetStatusReporter(location: location, host: "host-a", ttl: 30, logger: logger)
      defer { reporter.stop() }
      try reporter.claim()
      try cluster.stop(0)
      reporter.report(.applied, revision: 7)
      // Two retries that failed too (at debug level) while the member is down: after about
      // 1 s and 2 s more.
      #expect(waitUntil(deadline: .seconds(15)) { said(.debug).count >= 2 }, "\(lines.withLock { $0 })")
      #expect(said(.warning).count == 1, "the failure is said once: \(said(.warning))")

      try cluster.restart(0)
      let client = try cluster.client()
      let statusKey = Array((HostStatus.prefix(of: "cfg/app") + "host-a").utf8)
      var landed: HostStatus?
      // The waits between retries grow to at most a third of the time to live (10 s), and a
      // quarter more.
      #expect(waitUntil(deadline: .seconds(20)) {
        landed = (try? client.get(statusKey).keyValue).flatMap { $0.flatMap { HostStatus(bytes: $0.value) } }
        return landed != nil
      }, "the report was tried again once the cluster answered")
      #expect(landed?.revision == 7 && landed?.state == .applied)
    }

    /// The waits between retries of a failed report: doubling from 1 s up to a third of the
    /// time to live (never below 1 s), each drawn a quarter either way.
    @Test func failedReportsAreRetriedAtDoublingJitteredWaits() {
      var delay = FleetStatusReporter.firstRetryDelay
      var delays: [Duration] = []
      for _ in 0..<5 {
        delays.append(delay)
        delay = FleetStatusReporter.retryDelay(after: delay, ttl: 10)
      }
      let third: Duration = .seconds(10) / 3
      let expected: [Duration] = [.seconds(1), .seconds(2), third, third, third]
      #expect(delays == expected)
      #expect(FleetStatusReporter.retryDelay(after: .seconds(1), ttl: 1) == .seconds(1), "never below the first delay")
      let waits = (0..<200).map { _ in FleetStatusReporter.jittered(.seconds(4)) }
      let (low, high): (Duration, Duration) = (.seconds(3), .seconds(5))
      #expect(waits.allSatisfy { $0 >= low && $0 <= high }, "\(waits.min()!) to \(waits.max()!)")
      #expect(Set(waits).count > 1, "drawn, not fixed")
    }

    /// README's "Locks, in the library" example as written, the file in a temporary directory
    /// and the cluster's address substituted.
    @Test func theReadmeLockExampleWorks() async throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let directory = try TemporaryDirectory()
      defer { directory.remove() }
      let deployed = Protected<[Int64]>([])
      func deploy(fencingToken: Int64) throws { deployed.withLock { $0.append(fencingToken) } }

      let lock = try await SharedFile(path: directory.file("config.json")).lockAsync(wait: .timeout(.seconds(5)))
      defer { lock.release() }                   // exclusive by default; lockAsync(exclusive: false) for readers

      let locker = try EtcdLocker(location: EtcdLocation(url: cluster.url("locks/deploy")), ttl: 10)
      let held = try await locker.acquireAsync()  // the lease is kept alive from now on
      held.lease.onLoss { reason in print("lost the lock: \(reason)") }   // stop acting as holder
      try deploy(fencingToken: held.fencingToken)  // greater for every later holder
      held.release()

      #expect(lock.isHeld && deployed.withLock { $0 } == [held.fencingToken])
      #expect(waitUntil { (try? cluster.keys(prefix: "locks/deploy/")) == [] }, "released")
    }
  }
}

/// Everything `stream` yields until it ends, or `nil` if it has not ended within `deadline`.
private func collect(_ stream: AsyncStream<String>, within deadline: Duration) async -> [String]? {
  let collected = Protected<[String]?>(nil)
  let reader = Task {
    var all: [String] = []
    for await element in stream { all.append(element) }
    collected.withLock { $0 = all }
  }
  defer { reader.cancel() }
  _ = await waitUntilAsync(deadline: deadline) { collected.withLock { $0 } != nil }
  return collected.withLock { $0 }
}
