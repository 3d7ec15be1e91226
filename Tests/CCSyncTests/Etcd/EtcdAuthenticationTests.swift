import Testing
@testable import CCSync
@testable import CCSyncEtcd

extension EtcdTests {
  /// A cluster with authentication on: credentials checked, tokens sent, refused tokens
  /// renewed once.
  @Suite struct Authentication {
    @Test func wrongOrMissingCredentialsFailAndTheRightOnesWork() throws {
      let cluster = try securedEtcdCluster()
      defer { cluster.shutdown() }
      let endpoint = cluster.endpoints[0]

      let anonymous = try cluster.client()
      let missing = #expect(throws: EtcdError.self) { try anonymous.get(bytes("k")) }
      guard case .authenticationFailed(endpoint, let missingMessage)? = missing else {
        Issue.record("expected authenticationFailed, got \(String(describing: missing))")
        return
      }
      #expect(missingMessage.contains("user name is empty"))

      let wrong = try cluster.client(credentials: EtcdClient.Credentials(user: "root", password: "guess"))
      let refused = #expect(throws: EtcdError.self) { try wrong.put(bytes("k"), value: bytes("v")) }
      guard case .authenticationFailed(endpoint, let message)? = refused else {
        Issue.record("expected authenticationFailed, got \(String(describing: refused))")
        return
      }
      #expect(message.contains("invalid user ID or password"))

      let right = try cluster.client(credentials: EtcdClient.Credentials(user: "root", password: "secret"))
      try right.put(bytes("k"), value: bytes("v"))
      #expect(try right.get(bytes("k")).keyValue?.value == bytes("v"))
      let stream = try right.watch(.key(bytes("k")))
      defer { stream.close() }
      try right.put(bytes("k"), value: bytes("w"))
      #expect(try stream.next(timeout: .seconds(5))?.events.first?.keyValue.value == bytes("w"))
    }

    @Test func aUserWithoutPermissionGetsPermissionDenied() throws {
      let cluster = try securedEtcdCluster()
      defer { cluster.shutdown() }
      let root = ["--user", "root:secret"]
      for arguments in [["user", "add", "reader:pw"], ["role", "add", "reader"], ["role", "grant-permission", "reader", "read", "public"], ["user", "grant-role", "reader", "reader"]] {
        #expect(try cluster.etcdctl(root + arguments).succeeded)
      }
      let reader = try cluster.client(credentials: EtcdClient.Credentials(user: "reader", password: "pw"))
      #expect(try reader.get(bytes("public")).keyValue == nil)
      let denied = #expect(throws: EtcdError.self) { try reader.put(bytes("public"), value: bytes("x")) }
      guard case .permissionDenied(cluster.endpoints[0], _)? = denied else {
        Issue.record("expected permissionDenied, got \(String(describing: denied))")
        return
      }
      let watchDenied = #expect(throws: EtcdError.self) { try reader.watch(.key(bytes("private"))) }
      guard case .permissionDenied? = watchDenied else {
        Issue.record("expected permissionDenied for the watch, got \(String(describing: watchDenied))")
        return
      }
    }

    @Test func anExpiredTokenIsRenewedOnceAndTheWriteAppliedOnce() throws {
      let cluster = try securedEtcdCluster(tokenTTL: 1)
      defer { cluster.shutdown() }
      let client = try cluster.client(credentials: EtcdClient.Credentials(user: "root", password: "secret"))
      let first = try #require(try client.authenticate())
      #expect(client.tokenState.withLock { $0.token } == first)

      // A simple token expires after its TTL without use, checked once a second; using it
      // renews it, so nothing can watch it expire: stay idle past TTL plus the check, then
      // make sure the member refuses it.
      let endpoint = try HTTPEndpoint(parsing: cluster.endpoints[0])
      let probe = HTTPRequest(path: "/v3/kv/range", headers: EtcdClient.headers(token: first), body: bytes(#"{"key":"AA=="}"#))
      var refused = false
      for _ in 0..<4 where !refused {
        ContinuousClock.sleepThread(for: .milliseconds(2200))
        let answer = try HTTPClient().send(probe, to: endpoint, deadline: .now + .seconds(2), idempotent: true)
        refused = answer.status == 401 && String(decoding: answer.body, as: UTF8.self).contains("invalid auth token")
      }
      try #require(refused, "the member still accepts the token after its TTL")

      // The put is refused for the token, the client authenticates again and repeats it.
      let put = try client.put(bytes("k"), value: bytes("after expiry"))
      let renewed = client.tokenState.withLock { $0.token }
      #expect(renewed != nil && renewed != first)
      let stored = try #require(try client.get(bytes("k")).keyValue)
      #expect(stored.version == 1)
      #expect(stored.modRevision == put.revision)
    }

    @Test func tokensLostInARestartAreRenewedForCallsAndWatches() throws {
      let cluster = try securedEtcdCluster()
      defer { cluster.shutdown() }
      let client = try cluster.client(credentials: EtcdClient.Credentials(user: "root", password: "secret"))
      try client.put(bytes("k"), value: bytes("1"))
      let before = client.tokenState.withLock { $0.token }

      // Simple tokens live in the member's memory: after a restart every one is invalid.
      try cluster.stop(0)
      try cluster.restart(0)
      let stream = try client.watch(.key(bytes("k")))
      defer { stream.close() }
      let afterWatch = client.tokenState.withLock { $0.token }
      #expect(afterWatch != before)
      try client.put(bytes("k"), value: bytes("2"))
      #expect(try stream.next(timeout: .seconds(5))?.events.first?.keyValue.value == bytes("2"))
      #expect(client.tokenState.withLock { $0.token } == afterWatch)
    }
  }
}
