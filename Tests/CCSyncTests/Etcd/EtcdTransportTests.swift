import Glibc
import Testing
@testable import CCSync
@testable import CCSyncEtcd
@testable import CCSyncSystem

extension EtcdTests {
  /// The layers under the etcd client, against a real member: the TCP socket's errors and
  /// deadlines, and HTTP/1.1 framing (fixed length, chunked with trailers).
  @Suite struct Transport {
    /// `SIGPIPE` is at its default action in the test process (it would end the run): a
    /// send to a connection the peer closed must fail with `EPIPE` or `ECONNRESET` instead.
    @Test func sendingToAClosedConnectionFailsInsteadOfRaisingSIGPIPE() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let endpoint = try HTTPEndpoint(parsing: cluster.endpoints[0])
      let socket = try TCPSocket.connect(host: endpoint.host, port: endpoint.port, deadline: .now + .seconds(2))
      defer { socket.close() }
      #expect(!socket.hasPendingInput)
      try cluster.stop(0)
      #expect(socket.hasPendingInput)  // the end of stream is there to read

      var failure: SystemError?
      for _ in 0..<200 where failure == nil {
        // The first send after the peer closed may still be accepted (the reset comes back
        // in answer to it); a later one fails.
        do {
          try socket.send(bytes("GET / HTTP/1.1\r\n\r\n"), deadline: .now + .seconds(1))
          ContinuousClock.sleepThread(for: .milliseconds(2))
        } catch {
          failure = error
        }
      }
      let error = try #require(failure)
      #expect(error.errorNumber == .brokenPipe || error.errorNumber == .connectionReset, "\(error)")
      #expect(error.operation == "send")
      #expect(error.path == cluster.endpoints[0])
    }

    @Test func aRefusedConnectAndAReceiveThatOutlivesItsDeadlineNameTheEndpoint() throws {
      let port = try EtcdCluster.freePort()
      let refused = #expect(throws: SystemError.self) {
        try TCPSocket.connect(host: "127.0.0.1", port: port, deadline: .now + .seconds(1))
      }
      #expect(refused?.errorNumber == .connectionRefused)
      #expect(refused?.description == "connect '127.0.0.1:\(port)': Connection refused (errno 111)")

      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      try cluster.freeze(0)
      let endpoint = try HTTPEndpoint(parsing: cluster.endpoints[0])
      // The kernel completes the handshake for a stopped process; nothing answers after.
      let socket = try TCPSocket.connect(host: endpoint.host, port: endpoint.port, deadline: .now + .seconds(1))
      defer { socket.close() }
      try socket.send(bytes("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"), deadline: .now + .seconds(1))
      var buffer = [UInt8](repeating: 0, count: 64)
      let started = ContinuousClock.now
      let timedOut = #expect(throws: SystemError.self) {
        _ = try buffer.withUnsafeMutableBytes { try socket.receive(into: $0, deadline: .now + .milliseconds(200)) }
      }
      let waited = ContinuousClock.now - started
      #expect(timedOut?.errorNumber == .timedOut)
      #expect(timedOut?.operation == "receive")
      #expect(timedOut?.path == cluster.endpoints[0])
      #expect(waited >= .milliseconds(200) && waited < .seconds(1), "\(waited)")
      try cluster.thaw(0)
      // Thawed, it answers what it was sent while stopped.
      let count = try buffer.withUnsafeMutableBytes { try socket.receive(into: $0, deadline: .now + .seconds(5)) }
      #expect(String(decoding: buffer[..<count], as: UTF8.self).hasPrefix("HTTP/1.1 200"))
    }

    /// The HTTP client's plain connections wait for an answer inside `recv`
    /// (``TCPSocket/makeReadsBlock()``, `SO_RCVTIMEO`): one system call an answer or a watch
    /// event, where `poll` and `recv` made two. The connector's sockets block in `recv`, and
    /// keep the non-blocking socket's contract: a receive ends at its deadline, the next one
    /// is held to its own shorter deadline, not the timeout set before, and
    /// ``TCPSocket/interrupt()`` ends one waiting with a distant deadline.
    @Test func thePlainConnectorsSocketsBlockInReceiveAndKeepTheirDeadlines() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      try cluster.freeze(0)
      defer { try? cluster.thaw(0) }
      let endpoint = try HTTPEndpoint(parsing: cluster.endpoints[0])
      let stream = try PlainTCPConnector().connect(to: endpoint, deadline: .now + .seconds(1))
      let socket = try #require(stream as? TCPSocket)
      defer { socket.close() }
      #expect(fcntl(socket.descriptor, F_GETFL) & O_NONBLOCK == 0, "the connector's socket does not block in recv")
      try socket.send(bytes("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"), deadline: .now + .seconds(1))
      var buffer = [UInt8](repeating: 0, count: 64)
      for (wait, limit) in [(Duration.milliseconds(400), Duration.seconds(2)), (.milliseconds(100), .milliseconds(390))] {
        let started = ContinuousClock.now
        let timedOut = #expect(throws: SystemError.self) {
          _ = try buffer.withUnsafeMutableBytes { try socket.receive(into: $0, deadline: .now + wait) }
        }
        let waited = ContinuousClock.now - started
        #expect(timedOut?.errorNumber == .timedOut)
        #expect(timedOut?.path == cluster.endpoints[0])
        #expect(waited >= wait && waited < limit, "waited \(waited) for a deadline \(wait) away")
      }

      let reader = BackgroundThread { () throws -> Int in
        var buffer = [UInt8](repeating: 0, count: 64)
        return try buffer.withUnsafeMutableBytes { try socket.receive(into: $0, deadline: .now + .seconds(60)) }
      }
      socket.interrupt()
      #expect(try reader.value(deadline: .seconds(30)) == 0, "an interrupted receive returns the end of the stream")
    }

    /// The endpoint race: an endpoint that refuses drops out at once and the next one that
    /// connects wins, its connection left in the pool for the request; with none listening
    /// the race fails naming each endpoint and why. (An endpoint whose packets are dropped
    /// is the partition tests' case: `FaultPartitionTests`.)
    @Test func theFirstEndpointToConnectWinsTheRace() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let ports = try EtcdCluster.freePorts(2)
      let refused = try ports.map { try HTTPEndpoint(parsing: "127.0.0.1:\($0)") }
      let serving = try HTTPEndpoint(parsing: cluster.endpoints[0])
      let http = HTTPClient()
      guard case .connected(let winner) = http.connectFirst([refused[0], serving, refused[1]], stagger: .milliseconds(5), deadline: .now + .seconds(5)) else {
        Issue.record("no endpoint connected")
        return
      }
      #expect(winner == serving)
      #expect(http.hasIdleConnection(to: serving))
      guard case .failed(let errors) = http.connectFirst(refused, stagger: .milliseconds(5), deadline: .now + .seconds(5)) else {
        Issue.record("a closed port connected")
        return
      }
      #expect(errors.map(\.endpoint) == refused.map(\.description))
      #expect(errors.allSatisfy { $0.reason.contains("Connection refused") }, "\(errors)")
    }

    @Test func namesAndLiteralsResolve() throws {
      let local = try SocketAddress.resolve(host: "localhost", port: 2379).map(\.description)
      #expect(local.contains("127.0.0.1:2379") || local.contains("[::1]:2379"), "\(local)")
      #expect(try SocketAddress.resolve(host: "::1", port: 7).map(\.description) == ["[::1]:7"])
      #expect(try SocketAddress.resolve(host: "127.0.0.2", port: 65535).map(\.description) == ["127.0.0.2:65535"])
      let badPort = #expect(throws: SystemError.self) { try SocketAddress.resolve(host: "127.0.0.1", port: 70000) }
      #expect(badPort?.operation == "resolve")
      #expect(badPort?.path == "127.0.0.1:70000")
    }

    @Test func fixedLengthAndChunkedBodiesWithTrailersAreReadAndTheConnectionKept() throws {
      let cluster = try EtcdCluster(flags: ["--max-request-bytes", "1024"])
      defer { cluster.shutdown() }
      let endpoint = try HTTPEndpoint(parsing: cluster.endpoints[0])
      let http = HTTPClient()
      let deadline = ContinuousClock.now + .seconds(5)

      let version = try http.send(HTTPRequest(method: "GET", path: "/version"), to: endpoint, deadline: deadline, idempotent: true)
      #expect(version.status == 200)
      #expect(version.head.framing == .length(version.body.count))
      #expect(String(decoding: version.body, as: UTF8.self).contains("etcdserver"))

      // A gRPC error: etcd 3.4's gateway sends it chunked, with a trailer; 3.5's (measured on
      // 3.5.1) with a length and no trailer, so there the chunked reading is the watch
      // tests' (a watch stream is chunked on both).
      let tooLarge = HTTPRequest(path: "/v3/kv/put", body: bytes(#"{"key":"YQ==","value":""# + String(repeating: "A", count: 2000) + #""}"#))
      let refused = try http.send(tooLarge, to: endpoint, deadline: deadline, idempotent: false)
      #expect(refused.status == 400)
      if EtcdInstallation.version.hasPrefix("3.4.") {
        #expect(refused.head.framing == .chunked)
        #expect(refused.trailers == [HTTPHeader(name: "Grpc-Trailer-Content-Type", value: "application/grpc")])
      } else {
        #expect(refused.head.framing == .length(refused.body.count), "etcd \(EtcdInstallation.version)")
        #expect(refused.trailers.isEmpty, "etcd \(EtcdInstallation.version)")
      }
      guard case .failure(let error) = EtcdReply(refused) else {
        Issue.record("expected an error reply, got \(String(decoding: refused.body, as: UTF8.self))")
        return
      }
      #expect(error == EtcdServerError(code: 3, message: "etcdserver: request is too large"))

      // Both went over the one connection, which is still good for more.
      let health = try http.send(HTTPRequest(method: "GET", path: "/health"), to: endpoint, deadline: deadline, idempotent: true)
      #expect(health.status == 200)
      #expect(http.idleConnectionUses(to: endpoint) == [3])
    }
  }
}
