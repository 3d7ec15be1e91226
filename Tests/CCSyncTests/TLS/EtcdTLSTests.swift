import Foundation
import Testing
@testable import CCSync
@testable import CCSyncCLI
@testable import CCSyncEtcd
import CCSyncSystem

/// etcd over TLS against a real member serving certificates the test made: the library, the
/// client's refusals (the CA, the name, the client certificate) and `ccsync mirror`.
@Suite(
  .enabled(if: EtcdCluster.isInstalled, EtcdCluster.absentMessage),
  .enabled(if: TestCertificates.openssl != nil, TestCertificates.absentMessage))
struct EtcdTLSTests {
  /// Runs `body` with fresh certificates and a one-member cluster serving the server
  /// certificate on https://127.0.0.1, removing both afterwards.
  private static func withCluster(
    requiringClientCertificates: Bool = false, _ body: (TestCertificates, EtcdCluster) throws -> Void
  ) throws {
    let certificates = try TestCertificates()
    defer { certificates.remove() }
    let cluster = try EtcdCluster(
      tls: EtcdCluster.TLS(
        certificateFile: certificates.serverCertificate, keyFile: certificates.serverKey,
        clientCAFile: requiringClientCertificates ? certificates.caFile : nil,
        client: certificates.settings(withClientCertificate: requiringClientCertificates)))
    defer { cluster.shutdown() }
    try body(certificates, cluster)
  }

  /// What `etcdctl get` finds under `key` (with the cluster's own certificates): empty when
  /// the key does not exist.
  private static func stored(_ key: String, in cluster: EtcdCluster) throws -> String {
    let outcome = try cluster.etcdctl(["get", "--print-value-only", key])
    #expect(outcome.status == 0, "\(outcome.standardError)")
    return outcome.standardOutput
  }

  /// A put with `settings` to `endpoints` fails as a TLS refusal (not an unknown outcome)
  /// whose reason contains `reason`, and the key stays absent.
  private static func expectPutRefused(
    _ settings: TLSSettings, endpoints: [String]? = nil, in cluster: EtcdCluster, reason: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    let client = try EtcdClient(EtcdClient.Configuration(endpoints: endpoints ?? cluster.endpoints, tls: settings))
    do {
      try client.put(Array("refused".utf8), value: Array("1".utf8))
      Issue.record("the put went through", sourceLocation: sourceLocation)
    } catch {
      guard case .tlsRefused(_, let message) = error else {
        Issue.record("expected tlsRefused, got \(error)", sourceLocation: sourceLocation)
        return
      }
      #expect(message.contains(reason), "\(message)", sourceLocation: sourceLocation)
    }
    #expect(try stored("refused", in: cluster).isEmpty, "nothing reached the member", sourceLocation: sourceLocation)
  }

  @Test func theLibraryReadsAndWritesThroughTheCA() throws {
    try EtcdTLSTests.withCluster { certificates, cluster in
      let location = EtcdLocation(endpoints: cluster.endpoints, key: "cfg/app", caFile: certificates.caFile)
      #expect(location.description == "etcd://\(cluster.endpoints[0])/cfg/app", "the scheme stays visible")
      let document = SharedDocument(etcd: location, logger: .silent)
      #expect(try document.read() == nil)
      try document.update { $0 = ["port": 8080] }
      #expect(try SharedDocument(etcd: location, logger: .silent).read() == ["port": 8080])
      #expect(try EtcdTLSTests.stored("cfg/app", in: cluster) == "{\n  \"port\": 8080\n}\n\n")
    }
  }

  /// Calls one after another share one kept-alive TLS connection (a TLS 1.3 session ticket
  /// arriving on it is no reason to drop it).
  @Test func oneConnectionCarriesCallAfterCall() throws {
    try EtcdTLSTests.withCluster { certificates, cluster in
      let client = try cluster.client()
      for index in 0..<5 { try client.put(Array("k".utf8), value: Array("\(index)".utf8)) }
      #expect(try client.get(Array("k".utf8)).keyValue?.value == Array("4".utf8))
      #expect(client.http.idleConnectionUses(to: client.endpoints[0]) == [6])
    }
  }

  @Test func aCertificateTheCADoesNotVouchForIsAccessDeniedAndNothingIsSent() throws {
    try EtcdTLSTests.withCluster { certificates, cluster in
      let location = EtcdLocation(endpoints: cluster.endpoints, key: "cfg/app", caFile: certificates.otherCAFile)
      #expect {
        try SharedDocument(etcd: location, logger: .silent).update { $0 = ["port": 1] }
      } throws: { error in
        guard case StorageError.store(.accessDenied(let message)) = error else { return false }
        return message.contains("certificate verify failed: unable to get local issuer certificate")
      }
      #expect(try EtcdTLSTests.stored("cfg/app", in: cluster).isEmpty)
      try EtcdTLSTests.expectPutRefused(
        TLSSettings(caFile: certificates.otherCAFile), in: cluster, reason: "unable to get local issuer certificate")
    }
  }

  /// The certificate names 127.0.0.1 only: `localhost` is another name, though it leads to
  /// the same member.
  @Test func theCertificateMustNameTheHostConnectedTo() throws {
    try EtcdTLSTests.withCluster { certificates, cluster in
      let byName = "https://localhost:\(cluster.members[0].clientPort)"
      try EtcdTLSTests.expectPutRefused(
        certificates.settings(), endpoints: [byName], in: cluster, reason: "certificate verify failed: hostname mismatch")
    }
  }

  /// A watch stream over TLS: events after quiet timeouts (a deadline passing mid-read
  /// leaves the TLS stream where it was), and a cancel from another thread ends it at once.
  @Test func aWatchStreamFollowsTheKeyAndCanBeCanceled() throws {
    try EtcdTLSTests.withCluster { certificates, cluster in
      let client = try cluster.client()
      let stream = try client.watch(.key(Array("w".utf8)))
      for round in 0..<3 {
        #expect(try stream.next(timeout: .milliseconds(50)) == nil)
        try client.put(Array("w".utf8), value: Array("\(round)".utf8))
        let response = try #require(try stream.next(timeout: .seconds(5)))
        #expect(response.events.map(\.keyValue.value) == [Array("\(round)".utf8)])
      }
      // The cancel comes while this thread waits in SSL_read: the socket's shutdown ends it.
      let canceller = stream.canceller
      DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(200)) { canceller.cancel() }
      let started = ContinuousClock.now
      #expect {
        _ = try stream.next(timeout: .seconds(10))
      } throws: { error in
        "\(error)".contains("watch stream ended: canceled by the client")
      }
      #expect(ContinuousClock.now - started < .seconds(3))
    }
  }

  /// With `--client-cert-auth` the member refuses a client without a certificate, or with one
  /// its CA did not sign: under TLS 1.3 after the client's side of the handshake, on the first
  /// read, still before the member read the request.
  @Test func aMemberRequiringClientCertificatesGetsTheOneConfigured() throws {
    try EtcdTLSTests.withCluster(requiringClientCertificates: true) { certificates, cluster in
      try EtcdTLSTests.expectPutRefused(certificates.settings(), in: cluster, reason: "the server refused this client: ")
      let stranger = TLSSettings(
        caFile: certificates.caFile, certificateFile: certificates.strangerCertificate, privateKeyFile: certificates.strangerKey)
      try EtcdTLSTests.expectPutRefused(stranger, in: cluster, reason: "the server refused this client: ")

      let location = EtcdLocation(
        endpoints: cluster.endpoints, key: "cfg/app", caFile: certificates.caFile,
        certificateFile: certificates.clientCertificate, privateKeyFile: certificates.clientKey)
      let document = SharedDocument(etcd: location, logger: .silent)
      try document.update { $0 = ["port": 8080] }
      try document.update { $0 = ["port": 8081] }
      #expect(try document.read() == ["port": 8081])
      #expect(try EtcdTLSTests.stored("cfg/app", in: cluster) == "{\n  \"port\": 8081\n}\n\n")
    }
  }

  /// A server that resets the connection at the ClientHello (etcd 3.5 serving plain HTTP
  /// sometimes does, where 3.4 closes it) is the same: unreachable, with the hint. Without
  /// the mapping the reset surfaced as a bare "Connection reset by peer".
  @Test func aResetDuringTheHandshakeGetsTheSameHint() throws {
    let server = """
      import socket, struct
      s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(4)
      print("port", s.getsockname()[1], flush=True)
      while True:
          c, _ = s.accept(); c.recv(1)
          c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)); c.close()
      """
    let child = try InteractiveChild("/usr/bin/python3", ["-c", server])
    defer { _ = child.terminate(signal: SIGKILL) }
    let port = try #require(child.nextLine(startingWith: "port ").map { $0.dropFirst(5) })
    let client = try EtcdClient(EtcdClient.Configuration(endpoints: ["https://127.0.0.1:\(port)"]))
    #expect {
      try client.put(Array("k".utf8), value: Array("1".utf8))
    } throws: { error in
      guard case EtcdError.unreachable(let failures) = error else { return false }
      return failures.count == 1 && failures[0].reason.hasSuffix("the server closed the connection (does it serve TLS?)")
    }
  }

  /// `https://` to a member that serves plain HTTP: it drops the connection without a word,
  /// which is all the client sees, so it is an endpoint that did not answer (69), with a hint.
  @Test func anHTTPSEndpointOnAPlainMemberIsUnreachable() throws {
    let cluster = try EtcdCluster()
    defer { cluster.shutdown() }
    let client = try EtcdClient(EtcdClient.Configuration(endpoints: ["https://" + cluster.endpoints[0]]))
    #expect {
      try client.put(Array("k".utf8), value: Array("1".utf8))
    } throws: { error in
      guard case EtcdError.unreachable(let failures) = error else { return false }
      return failures.count == 1 && failures[0].reason.hasSuffix("the server closed the connection (does it serve TLS?)")
    }
    #expect(try EtcdTLSTests.stored("k", in: cluster).isEmpty)
  }

  /// `ccsync mirror` with etcdctl's variables: a scheme-less endpoint is TLS because
  /// certificates are given, the member requires the client certificate, and a change goes
  /// each way.
  @Test func theMirrorWorksOverTLSWithEtcdctlsVariables() throws {
    try EtcdTLSTests.withCluster(requiringClientCertificates: true) { certificates, cluster in
      try withTemporaryDirectory { directory in
        let file = directory.file("app.json")
        try #"{"port": 1}"#.write(toFile: file, atomically: true, encoding: .utf8)
        let environment = CLI.environment([
          "ETCDCTL_ENDPOINTS": "127.0.0.1:\(cluster.members[0].clientPort)", "ETCDCTL_CACERT": certificates.caFile,
          "ETCDCTL_CERT": certificates.clientCertificate, "ETCDCTL_KEY": certificates.clientKey,
        ])
        let mirror = try CLI.start(["mirror", file, "etcd:///cfg/mirror"], environment: environment)
        defer { mirror.stop() }
        let pushed = try waitUntil(deadline: .seconds(20)) { try EtcdTLSTests.stored("cfg/mirror", in: cluster).contains("\"port\": 1") }
        #expect(pushed, "the file reached the key: \(mirror.standardError)")
        let put = try cluster.etcdctl(["put", "cfg/mirror", #"{"port": 2}"#])
        #expect(put.status == 0, "\(put.standardError)")
        let pulled = waitUntil(deadline: .seconds(20)) {
          (try? String(contentsOfFile: file, encoding: .utf8))?.contains("\"port\": 2") == true
        }
        #expect(pulled, "the key reached the file: \(mirror.standardError)")
        #expect(mirror.isRunning, "\(mirror.standardError)")
      }
    }
  }

  /// A mirror started with a CA that does not vouch for the member is misconfigured: it
  /// exits 77 at its first contact, naming the key and the refusal, instead of retrying for
  /// ever (docs/CLI.md, "ccsync mirror", refused at start).
  @Test func aMirrorWhoseCADoesNotVouchForTheMemberExits77AtStart() throws {
    try EtcdTLSTests.withCluster { certificates, cluster in
      try withTemporaryDirectory { directory in
        let file = directory.file("app.json")
        try #"{"port": 1}"#.write(toFile: file, atomically: true, encoding: .utf8)
        let url = "etcd://127.0.0.1:\(cluster.members[0].clientPort)/cfg/mirror"
        let outcome = try CLI.run(
          ["mirror", file, url], environment: CLI.environment(["ETCDCTL_CACERT": certificates.otherCAFile]), deadline: .seconds(20))
        #expect(outcome.status == 77, "\(outcome.summary)")
        #expect(outcome.standardError.hasPrefix("ccsync: mirror '\(file)' <-> '\(url)': the cluster refused the mirror's first contact"), "\(outcome.summary)")
        #expect(outcome.standardError.contains("no TLS connection"), "\(outcome.summary)")
        #expect(try EtcdTLSTests.stored("cfg/mirror", in: cluster).isEmpty, "nothing reached the member")
      }
    }
  }

  @Test func etcdctlsVariablesFillTheLocation() throws {
    let variables = [
      "ETCDCTL_CACERT": "/ca.pem", "ETCDCTL_CERT": "/client.pem", "ETCDCTL_KEY": "/client.key",
      "ETCDCTL_ENDPOINTS": "127.0.0.1:2379,http://10.0.0.1:2379",
    ]
    let location = try EtcdLocation(url: "etcd:///k", environment: { variables[$0] })
    #expect(location.caFile == "/ca.pem" && location.certificateFile == "/client.pem" && location.privateKeyFile == "/client.key")
    let client = try EtcdClient(EtcdClient.Configuration(endpoints: location.endpoints, tls: location.tlsSettings))
    #expect(client.endpoints.map(\.isSecure) == [true, false], "scheme-less is TLS when files are given; http:// never")
    #expect(try EtcdLocation(url: "etcd://127.0.0.1:2379/k", environment: { _ in nil }).tlsSettings.isEmpty)
    #expect {
      try EtcdLocation(url: "etcd:///k", environment: { $0 == "ETCDCTL_CERT" ? "/client.pem" : nil })
    } throws: { error in
      guard case StoreError.invalidLocation(_, let reason) = error else { return false }
      return reason == "$ETCDCTL_CERT is set but not $ETCDCTL_KEY: a client certificate needs its key"
    }
  }

  @Test func aTLSRefusalExits77() {
    let error = StoreError(EtcdError.tlsRefused(endpoint: "127.0.0.1:2379", reason: "certificate verify failed"), name: "etcd://127.0.0.1:2379/k")
    #expect(CommandFailure(error, file: nil).code == 77)
  }
}
