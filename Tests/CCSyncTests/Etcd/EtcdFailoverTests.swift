import Testing
@testable import CCSync
@testable import CCSyncEtcd

extension EtcdTests {
  /// Endpoints that refuse, stop answering or die: calls move on within their deadline,
  /// and writes are never sent twice.
  @Suite struct Failover {
    @Test func withEveryEndpointUnreachableTheErrorNamesEachAndWhy() throws {
      let ports = try EtcdCluster.freePorts(2)
      let endpoints = ["127.0.0.1:\(ports[0])", "http://127.0.0.1:\(ports[1])/"]
      let client = try EtcdClient(endpoints: endpoints)
      let started = ContinuousClock.now
      for operation in ["range", "put"] {
        let error = #expect(throws: EtcdError.self) {
          if operation == "range" { _ = try client.get(bytes("k")) } else { try client.put(bytes("k"), value: bytes("v")) }
        }
        // A write that could not be delivered is unreachable too, not an unknown outcome.
        guard case .unreachable(let failures)? = error else {
          Issue.record("\(operation): expected unreachable, got \(String(describing: error))")
          continue
        }
        #expect(failures.map(\.endpoint) == client.endpoints.map(\.description))
        for failure in failures { #expect(failure.reason.contains("Connection refused"), "\(failure)") }
        let text = error?.description ?? ""
        #expect(text.hasPrefix("etcd unreachable: \(client.endpoints[0]): "))
        #expect(text.contains(client.endpoints[1].description))
      }
      #expect(ContinuousClock.now - started < .seconds(1))
    }

    @Test func endpointsThatDoNotParseAreRefusedUpFront() {
      for bad in ["127.0.0.1:99999", "127.0.0.1:2379/v3", "::1:2379", "ftp://x:1"] {
        let error = #expect(throws: EtcdError.self) { try EtcdClient(endpoints: [bad]) }
        guard case .invalidConfiguration(let reason)? = error else {
          Issue.record("\(bad): expected invalidConfiguration, got \(String(describing: error))")
          continue
        }
        #expect(reason.contains(bad), "\(reason)")
      }
      #expect(throws: EtcdError.invalidConfiguration("no endpoint given")) { try EtcdClient(endpoints: []) }
      let parsed = try? EtcdClient(endpoints: ["localhost", "[::1]:23", "HTTP://10.0.0.1:7"]).endpoints
      #expect(parsed == [HTTPEndpoint(host: "localhost", port: 2379), HTTPEndpoint(host: "::1", port: 23), HTTPEndpoint(host: "10.0.0.1", port: 7)])
    }

    @Test func aFrozenMemberCostsOneAttemptAndTheCallMovesOn() throws {
      let cluster = try EtcdCluster(members: 3)
      defer { cluster.shutdown() }
      let leader = try cluster.leaderIndex()
      let frozen = (leader + 1) % 3
      // The frozen follower first: every call starts there.
      let order = [frozen] + (0..<3).filter { $0 != frozen }
      let client = try cluster.client(endpoints: order.map { cluster.endpoints[$0] }, attemptTimeout: .seconds(1))
      try client.put(bytes("k"), value: bytes("before"))  // a kept-alive connection to the follower
      // The writer below, with its connection to the follower made before the freeze too: its
      // write is sent there. (A connection dialled after the freeze races the next member after
      // a few milliseconds, so under load another member may take the write, which proves
      // nothing about a write that was sent and never answered.)
      let writer = try cluster.client(endpoints: order.map { cluster.endpoints[$0] }, attemptTimeout: .seconds(1))
      #expect(try writer.get(bytes("k")).keyValue?.value == bytes("before"))
      try cluster.freeze(frozen)

      // A read fails over: one attempt timeout, then another member answers.
      var started = ContinuousClock.now
      #expect(try client.get(bytes("k")).keyValue?.value == bytes("before"))
      var took = ContinuousClock.now - started
      // Served by another member (the frozen one is index 0 here), and without a hang; how
      // long the frozen member took to give up on is the machine's business.
      #expect(client.preferredEndpoint.withLock { $0 } != 0, "the read was not moved on")
      #expect(took < .seconds(3), "\(took)")

      // Creating a watch changes nothing: it moves on like a read. (A new client: the first
      // one now starts where the read was answered.)
      let watcher = try cluster.client(endpoints: order.map { cluster.endpoints[$0] }, attemptTimeout: .seconds(1))
      started = ContinuousClock.now
      let stream = try watcher.watch(.key(bytes("k")))
      defer { stream.close() }
      #expect(stream.endpoint != cluster.endpoints[frozen])
      took = ContinuousClock.now - started
      #expect(took < .seconds(3), "\(took)")

      // A write to the frozen member is sent and never answered: not repeated elsewhere.
      started = ContinuousClock.now
      let error = #expect(throws: EtcdError.self) { try writer.put(bytes("k"), value: bytes("unknown")) }
      guard case .outcomeUnknown(let endpoint, let operation, _)? = error else {
        Issue.record("expected outcomeUnknown, got \(String(describing: error))")
        return
      }
      #expect(endpoint == cluster.endpoints[frozen])
      #expect(operation == "put")
      took = ContinuousClock.now - started
      #expect(took < .seconds(3), "\(took)")
      // The next call starts past the silent member and needs no attempt timeout.
      started = ContinuousClock.now
      try writer.put(bytes("k"), value: bytes("after"))
      #expect(ContinuousClock.now - started < .milliseconds(900))
      #expect(try writer.get(bytes("k")).keyValue?.value == bytes("after"))
      try cluster.thaw(frozen)
    }

    @Test func aDeadlineShorterThanAnAttemptIsATimeoutNamingWhatWasTried() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let client = try cluster.client(deadline: .milliseconds(400))
      try client.put(bytes("k"), value: bytes("v"))
      try cluster.freeze(0)
      let started = ContinuousClock.now
      let error = #expect(throws: EtcdError.self) { try client.get(bytes("k")) }
      let took = ContinuousClock.now - started
      guard case .timeout("range", .milliseconds(400), let failures)? = error else {
        Issue.record("expected a timeout, got \(String(describing: error))")
        return
      }
      #expect(failures.map(\.endpoint) == cluster.endpoints)
      #expect(failures.first?.reason.contains("Connection timed out") == true, "\(failures)")
      #expect(took >= .milliseconds(400) && took < .seconds(2), "\(took)")
      #expect(error?.description.hasPrefix("etcd range: no answer within 0.4 seconds (\(cluster.endpoints[0]): ") == true, "\(error!)")
      try cluster.thaw(0)
      #expect(try client.get(bytes("k")).keyValue?.value == bytes("v"))
    }

    @Test func withTheLeaderKilledCallsContinueOnTheOthers() throws {
      let cluster = try EtcdCluster(members: 3)
      defer { cluster.shutdown() }
      let leader = try cluster.leaderIndex()
      let order = [leader] + (0..<3).filter { $0 != leader }
      let client = try cluster.client(endpoints: order.map { cluster.endpoints[$0] })
      let members = try client.members().sorted { $0.name < $1.name }
      #expect(members.map(\.name) == ["m0", "m1", "m2"])
      #expect(members.map(\.clientURLs) == cluster.endpoints.map { ["http://\($0)"] })
      #expect(try client.status(of: client.endpoints[0]).isLeader)
      let written = try client.put(bytes("k"), value: bytes("1"))
      let watch = try client.watch(.key(bytes("k")), startRevision: written.revision + 1)
      defer { watch.close() }

      try cluster.kill(leader)
      // A read right away: the dead leader refuses connections, a follower answers (once it
      // can confirm the read with the new leader).
      #expect(try client.get(bytes("k")).keyValue?.value == bytes("1"))
      // The stream on the dead leader ended; the client's next watch lands elsewhere.
      #expect(throws: EtcdError.self) { try watch.next(timeout: .seconds(5)) }
      #expect(cluster.members[leader].process == nil)
      let newLeader = try cluster.leaderIndex()
      #expect(newLeader != leader)

      let second = try client.put(bytes("k"), value: bytes("2"))
      #expect(second.revision > written.revision)
      let resumed = try client.watch(.key(bytes("k")), startRevision: written.revision + 1)
      defer { resumed.close() }
      #expect(resumed.endpoint != cluster.endpoints[leader])
      #expect(try resumed.next(timeout: .seconds(5))?.events.map(\.keyValue.value) == [bytes("2")])
      guard case .swapped = try client.compareAndSwap(bytes("k"), expecting: .modifiedAt(second.revision), value: bytes("3")) else {
        Issue.record("compare-and-swap after the leader change failed")
        return
      }
    }

    @Test func aKeptAliveConnectionToARestartedMemberIsReplacedWithoutLosingAWrite() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let client = try cluster.client()
      let endpoint = client.endpoints[0]
      for round in 1...5 { try client.put(bytes("k"), value: bytes(String(round))) }
      // Five calls in a row went over one kept-alive connection.
      #expect(client.http.idleConnectionUses(to: endpoint) == [5])

      try cluster.stop(0)
      try cluster.restart(0)
      // The pooled connection is dead; the put notices before sending and goes out once on
      // a new connection: it succeeds, no outcomeUnknown.
      let put = try client.put(bytes("k"), value: bytes("after restart"))
      let stored = try #require(try client.get(bytes("k")).keyValue)
      #expect(stored.value == bytes("after restart"))
      #expect(stored.modRevision == put.revision)
      #expect(stored.version == 6)
      #expect(client.http.idleConnectionUses(to: endpoint) == [2])
    }

    @Test func aRequestOverTheServerLimitIsRequestTooLargeNamingTheLimitWhenKnown() throws {
      let cluster = try EtcdCluster(flags: ["--max-request-bytes", "2048"])
      defer { cluster.shutdown() }
      let client = try cluster.client()
      try client.put(bytes("small"), value: [UInt8](repeating: 7, count: 1000))

      // Over --max-request-bytes: etcd's own check, which names no limit.
      let overLimit = #expect(throws: EtcdError.self) { try client.put(bytes("big"), value: [UInt8](repeating: 7, count: 4000)) }
      guard case .requestTooLarge(let endpoint, nil, let message)? = overLimit else {
        Issue.record("expected requestTooLarge without a limit, got \(String(describing: overLimit))")
        return
      }
      #expect(endpoint == cluster.endpoints[0])
      #expect(message.contains("request is too large"))
      // Far over it: gRPC's receive limit (max-request-bytes + 512 KiB), which says it.
      let farOver = #expect(throws: EtcdError.self) { try client.put(bytes("huge"), value: [UInt8](repeating: 7, count: 600_000)) }
      #expect(farOver == .requestTooLarge(endpoint: cluster.endpoints[0], limit: 2048 + 512 * 1024, message: {
        if case .requestTooLarge(_, _, let message)? = farOver { return message }
        return ""
      }()))
      #expect(try client.get(bytes("big")).keyValue == nil)
      #expect(try client.get(bytes("huge")).keyValue == nil)
    }
  }
}
