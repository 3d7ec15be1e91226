import Testing
@testable import CCSync
@testable import CCSyncEtcd

extension EtcdTests {
  /// Leases (grant, keep-alive, revoke, time to live, expiry) and the v3lock service.
  @Suite struct LeaseAndLock {
    @Test func aLeaseKeepsItsKeysWhileRenewedAndTakesThemWhenRevoked() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let client = try cluster.client()
      let lease = try client.grantLease(ttl: 30)
      #expect(lease.ttl == 30)
      #expect(lease.id != 0)
      try client.put(bytes("session"), value: bytes("alive"), lease: lease.id)
      #expect(try client.get(bytes("session")).keyValue?.lease == lease.id)

      let status = try client.leaseStatus(lease.id, keys: true)
      #expect(status.id == lease.id)
      #expect(status.grantedTTL == 30)
      #expect(status.remainingTTL > 0 && status.remainingTTL <= 30)
      #expect(status.keys == [bytes("session")])
      #expect(try client.keepAlive(lease: lease.id) == 30)

      try client.revokeLease(lease.id)
      #expect(try client.get(bytes("session")).keyValue == nil)
      let endpoint = cluster.endpoints[0]
      #expect(throws: EtcdError.leaseNotFound(endpoint: endpoint, lease: lease.id)) { try client.leaseStatus(lease.id) }
      #expect(throws: EtcdError.leaseNotFound(endpoint: endpoint, lease: lease.id)) { try client.keepAlive(lease: lease.id) }
      #expect(throws: EtcdError.leaseNotFound(endpoint: endpoint, lease: lease.id)) { try client.revokeLease(lease.id) }
      #expect(throws: EtcdError.leaseNotFound(endpoint: endpoint, lease: lease.id)) {
        try client.put(bytes("session"), value: bytes("again"), lease: lease.id)
      }
    }

    @Test func keepAlivesOutlastTheTTLAndTheKeyGoesWhenTheyStop() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let client = try cluster.client()
      let lease = try client.grantLease(ttl: 1, id: 4242)
      #expect(lease.id == 4242)
      try client.put(bytes("ephemeral"), value: bytes("x"), lease: lease.id)

      // Renewed every 250 ms for twice its TTL: the key stays.
      let renewUntil = ContinuousClock.now + .seconds(2)
      while ContinuousClock.now < renewUntil {
        #expect(try client.keepAlive(lease: lease.id) == 1)
        #expect(try client.get(bytes("ephemeral")).keyValue != nil)
        ContinuousClock.sleepThread(for: .milliseconds(250))
      }
      // Not renewed: it expires, and its key with it.
      let expired = waitUntil(deadline: .seconds(5)) { (try? client.get(bytes("ephemeral")).keyValue) == .some(nil) }
      #expect(expired)
      #expect(throws: EtcdError.self) { try client.keepAlive(lease: lease.id) }
    }

    @Test func aLockExcludesASecondHolderUntilUnlockedAndItsRevisionGrows() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let client = try cluster.client()
      let name = bytes("jobs/lock")
      let first = try client.grantLease(ttl: 30)
      let held = try client.lock(name, lease: first.id)
      #expect(held.key.starts(with: name + bytes("/")))
      #expect(try client.get(held.key).keyValue?.lease == first.id)

      // A second holder waits; its deadline passes while waiting, with the outcome unknown.
      let impatient = try client.grantLease(ttl: 30)
      let started = ContinuousClock.now
      let timedOut = #expect(throws: EtcdError.self) { try client.lock(name, lease: impatient.id, deadline: .milliseconds(300)) }
      guard case .outcomeUnknown(_, "lock", _)? = timedOut else {
        Issue.record("expected outcomeUnknown, got \(String(describing: timedOut))")
        return
      }
      #expect(ContinuousClock.now - started < .seconds(2))
      try client.revokeLease(impatient.id)

      // One more waits in the background until the first unlocks.
      let second = try client.grantLease(ttl: 30)
      let waiter = BackgroundThread { try client.lock(name, lease: second.id, deadline: .seconds(10)) }
      #expect(waiter.result(deadline: .milliseconds(300)) == nil, "the second holder got the lock while the first held it")
      try client.unlock(held)
      let next = try waiter.value(deadline: .seconds(10))
      #expect(next.revision > held.revision)
      #expect(next.key != held.key)
      #expect(try client.get(held.key).keyValue == nil)

      // Revoking the holder's lease releases the lock too.
      try client.revokeLease(second.id)
      let third = try client.lock(name, lease: first.id, deadline: .seconds(2))
      #expect(third.revision > next.revision)
      try client.unlock(third)
      #expect(throws: EtcdError.invalidConfiguration("a lock needs a lease the holder keeps alive, not 0")) {
        try client.lock(name, lease: 0)
      }
    }
  }
}
