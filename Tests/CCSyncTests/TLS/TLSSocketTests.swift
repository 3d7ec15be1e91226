import Foundation
import Testing
@testable import CCSyncEtcd
import CCSyncSystem

/// The TLS transport on its own (``TLSSocket``, ``TLSConnector``), against `openssl s_server`
/// and sockets of the test's own: verification of the chain and of the IP address, deadlines,
/// and the errors for unusable settings and a missing library.
@Suite(.enabled(if: TestCertificates.openssl != nil, TestCertificates.absentMessage))
struct TLSSocketTests {
  @Test func aServerTheCAVouchesForCarriesHTTP() throws {
    let certificates = try TestCertificates()
    defer { certificates.remove() }
    let server = try OpenSSLServer(certificate: certificates.serverCertificate, key: certificates.serverKey)
    defer { server.stop() }
    let http = HTTPClient(connector: TLSConnector(settings: certificates.settings()))
    let response = try http.send(
      HTTPRequest(method: "GET", path: "/"), to: server.endpoint, deadline: .now + .seconds(10), idempotent: true)
    #expect(response.status == 200)
    #expect(String(decoding: response.body, as: UTF8.self).contains("Ciphers"), "s_server's status page")
  }

  @Test func aServerTheCADoesNotVouchForIsRefusedInTheHandshake() throws {
    let certificates = try TestCertificates()
    defer { certificates.remove() }
    let server = try OpenSSLServer(certificate: certificates.serverCertificate, key: certificates.serverKey)
    defer { server.stop() }
    for settings in [TLSSettings(caFile: certificates.otherCAFile), TLSSettings()] {
      let context = try TLSContext(caFile: settings.caFile, certificateFile: nil, keyFile: nil)
      #expect {
        _ = try TLSSocket.connect(host: "127.0.0.1", port: server.port, context: context, deadline: .now + .seconds(10))
      } throws: { error in
        let error = error as! TLSError
        return error.kind == .refused
          && error.description
            == "TLS handshake with '127.0.0.1:\(server.port)': certificate verify failed: unable to get local issuer certificate"
      }
    }
  }

  /// The certificate names 127.0.0.2 only; connecting to 127.0.0.1 must fail on the name,
  /// though the CA vouches for it.
  @Test func theCertificateMustNameTheAddressConnectedTo() throws {
    let certificates = try TestCertificates()
    defer { certificates.remove() }
    let server = try OpenSSLServer(certificate: certificates.otherAddressCertificate, key: certificates.otherAddressKey)
    defer { server.stop() }
    let context = try TLSContext(caFile: certificates.caFile, certificateFile: nil, keyFile: nil)
    #expect {
      _ = try TLSSocket.connect(host: "127.0.0.1", port: server.port, context: context, deadline: .now + .seconds(10))
    } throws: { error in
      let error = error as! TLSError
      return error.kind == .refused && error.description.hasSuffix("certificate verify failed: IP address mismatch")
    }
  }

  @Test func aServerThatNeverAnswersTheHandshakeTimesOut() throws {
    let listener = try Listener()
    defer { listener.close() }
    let context = try TLSContext(caFile: nil, certificateFile: nil, keyFile: nil)
    let start = ContinuousClock.now
    #expect {
      _ = try TLSSocket.connect(host: "127.0.0.1", port: listener.port, context: context, deadline: .now + .milliseconds(300))
    } throws: { error in
      (error as! TLSError).kind == .connection(timedOut: true)
    }
    #expect(ContinuousClock.now - start < .seconds(5))
  }

  /// A server that answers the ClientHello with plain HTTP does not speak TLS: a refusal,
  /// not an outage.
  @Test func aServerThatAnswersInPlainHTTPIsRefused() throws {
    let listener = try Listener()
    defer { listener.close() }
    let answering = listener.answerOnce(with: "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
    let context = try TLSContext(caFile: nil, certificateFile: nil, keyFile: nil)
    #expect {
      _ = try TLSSocket.connect(host: "127.0.0.1", port: listener.port, context: context, deadline: .now + .seconds(10))
    } throws: { error in
      let error = error as! TLSError
      return error.kind == .refused && error.description.hasPrefix("TLS handshake with '127.0.0.1:\(listener.port)': ")
    }
    _ = answering.result()
  }

  @Test func unusableSettingsAreNamed() throws {
    let certificates = try TestCertificates()
    defer { certificates.remove() }
    let missing = certificates.caFile + ".missing"
    #expect {
      _ = try TLSContext(caFile: missing, certificateFile: nil, keyFile: nil)
    } throws: { error in
      let error = error as! TLSError
      return error.kind == .settings && error.description.contains("cannot use the CA file '\(missing)'")
    }
    #expect {
      _ = try TLSContext(caFile: nil, certificateFile: certificates.clientCertificate, keyFile: certificates.strangerKey)
    } throws: { error in
      let error = error as! TLSError
      return error.kind == .settings && error.description.contains("key values mismatch")
    }
    #expect {
      _ = try TLSContext(caFile: nil, certificateFile: certificates.clientCertificate, keyFile: nil)
    } throws: { error in
      (error as! TLSError).kind == .settings
    }
  }

  /// Unusable settings fail the connection as a refusal, naming the file; plain HTTP on the
  /// same connector never reads them.
  @Test func theConnectorReadsTheSettingsOnlyForHTTPS() throws {
    let connector = TLSConnector(settings: TLSSettings(caFile: "/nonexistent/ca.pem"))
    let listener = try Listener()
    defer { listener.close() }
    let plain = try connector.connect(to: HTTPEndpoint(host: "127.0.0.1", port: listener.port), deadline: .now + .seconds(5))
    plain.close()
    #expect {
      _ = try connector.connect(to: HTTPEndpoint(host: "127.0.0.1", port: listener.port, isSecure: true), deadline: .now + .seconds(5))
    } throws: { error in
      let error = error as! TransportError
      return error.isTLSRefusal && error.description.contains("'/nonexistent/ca.pem'")
    }
  }

  @Test func aMissingLibraryIsNamed() throws {
    #expect {
      _ = try TLSLibrary(names: ["libccsync-no-such-ssl.so.3"])
    } throws: { error in
      let error = error as! TLSError
      return error.kind == .unavailable && error.description.hasPrefix("TLS unavailable: cannot load OpenSSL 3 (libccsync-no-such-ssl.so.3")
    }
    // The system's OpenSSL 3 loads (the loader refuses an older one).
    #expect(throws: Never.self) { _ = try TLSLibrary.shared.get() }
  }

  @Test func endpointsSayWhetherTheyAreTLS() throws {
    #expect(try HTTPEndpoint(parsing: "https://127.0.0.1:2379").isSecure)
    #expect(try HTTPEndpoint(parsing: "https://[::1]:2379/") == HTTPEndpoint(host: "::1", port: 2379, isSecure: true))
    #expect(try !HTTPEndpoint(parsing: "http://127.0.0.1:2379", secureByDefault: true).isSecure)
    #expect(try HTTPEndpoint(parsing: "127.0.0.1:2379", secureByDefault: true).isSecure)
    #expect(try !HTTPEndpoint(parsing: "127.0.0.1:2379").isSecure)
    #expect(try HTTPEndpoint(parsing: "HTTPS://etcd.example", defaultPort: 2379).description == "etcd.example:2379")
  }
}

/// `openssl s_server -www` on a free port of 127.0.0.1, for one test.
final class OpenSSLServer {
  let port: Int
  private let process: ChildProcess

  var endpoint: HTTPEndpoint { HTTPEndpoint(host: "127.0.0.1", port: port, isSecure: true) }

  /// Starts it serving `certificate`, and waits until it accepts connections.
  init(certificate: String, key: String) throws {
    port = try EtcdCluster.freePort()
    process = try ChildProcess.start(
      TestCertificates.openssl!,
      ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", certificate, "-key", key, "-www", "-quiet"])
    let accepting = waitUntil(deadline: .seconds(10)) {
      (try? TCPSocket.connect(host: "127.0.0.1", port: port, deadline: .now + .seconds(1))) != nil || !process.isRunning
    }
    guard accepting, process.isRunning else {
      process.stop()
      throw TestCertificatesError(message: "openssl s_server did not start: \(process.standardError)")
    }
  }

  func stop() {
    process.stop()
  }
}

/// A socket listening on a free port of 127.0.0.1 that never accepts: connections complete
/// (the kernel's backlog) and then nothing is ever said.
final class Listener {
  let port: Int
  private let descriptor: Int32

  init() throws {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let listening = withUnsafeMutablePointer(to: &address) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
        bind(descriptor, raw, length) == 0 && listen(descriptor, 8) == 0 && getsockname(descriptor, raw, &length) == 0
      }
    }
    guard descriptor >= 0, listening else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    self.descriptor = descriptor
    port = Int(UInt16(bigEndian: address.sin_port))
  }

  /// Accepts one connection on a thread of its own, reads what comes, answers `text` and
  /// closes.
  func answerOnce(with text: String) -> BackgroundThread<Void> {
    let descriptor = self.descriptor
    return BackgroundThread {
      let connection = accept(descriptor, nil, nil)
      guard connection >= 0 else { return }
      var buffer = [UInt8](repeating: 0, count: 4096)
      _ = recv(connection, &buffer, buffer.count, 0)
      _ = text.withCString { send(connection, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
      _ = Glibc.close(connection)
    }
  }

  func close() {
    _ = Glibc.close(descriptor)
  }
}
