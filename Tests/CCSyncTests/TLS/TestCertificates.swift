import Foundation
import Testing
@testable import CCSyncEtcd

/// Certificates for one test, made with the `openssl` command in a temporary directory
/// (EC P-256 keys, valid two days): a CA; a server certificate from it for the IP address
/// 127.0.0.1 (and usable as a client certificate, as etcd's gateway presents it to its own
/// gRPC server); a client certificate from it; a server certificate from it for 127.0.0.2
/// only; and a second, unrelated CA with a client certificate of its own.
final class TestCertificates: @unchecked Sendable {
  /// The `openssl` command, when installed.
  static let openssl = ChildProcess.find("openssl")
  /// Why the TLS tests skip without it.
  static let absentMessage: Comment = "the openssl command is not installed (Debian: apt-get install openssl)"

  private let directory: TemporaryDirectory

  /// The CA's certificate (PEM).
  var caFile: String { directory.file("ca.pem") }
  /// The server certificate for 127.0.0.1 and its key.
  var serverCertificate: String { directory.file("server.pem") }
  var serverKey: String { directory.file("server.key") }
  /// The server certificate for 127.0.0.2 only, and its key.
  var otherAddressCertificate: String { directory.file("other-address.pem") }
  var otherAddressKey: String { directory.file("other-address.key") }
  /// The client certificate and its key.
  var clientCertificate: String { directory.file("client.pem") }
  var clientKey: String { directory.file("client.key") }
  /// The unrelated CA's certificate.
  var otherCAFile: String { directory.file("other-ca.pem") }
  /// A client certificate from the unrelated CA, and its key.
  var strangerCertificate: String { directory.file("stranger.pem") }
  var strangerKey: String { directory.file("stranger.key") }

  /// Settings that trust the CA, with the client certificate when `withClientCertificate`.
  func settings(withClientCertificate: Bool = false) -> TLSSettings {
    TLSSettings(
      caFile: caFile, certificateFile: withClientCertificate ? clientCertificate : nil,
      privateKeyFile: withClientCertificate ? clientKey : nil)
  }

  /// Makes all of them.
  init() throws {
    directory = try TemporaryDirectory()
    // A configuration of its own, so the system's openssl.cnf changes nothing.
    let configuration = directory.file("openssl.cnf")
    try """
      [req]
      distinguished_name = name
      [name]
      [ca]
      basicConstraints = critical, CA:TRUE
      keyUsage = critical, keyCertSign, cRLSign
      subjectKeyIdentifier = hash
      [server]
      basicConstraints = CA:FALSE
      subjectAltName = IP:127.0.0.1
      extendedKeyUsage = serverAuth, clientAuth
      [other-address]
      basicConstraints = CA:FALSE
      subjectAltName = IP:127.0.0.2
      extendedKeyUsage = serverAuth
      [client]
      basicConstraints = CA:FALSE
      extendedKeyUsage = clientAuth

      """.write(toFile: configuration, atomically: true, encoding: .utf8)
    try makeCA("ca", configuration: configuration)
    try makeCA("other-ca", configuration: configuration)
    try makeLeaf("server", section: "server", by: "ca", configuration: configuration)
    try makeLeaf("other-address", section: "other-address", by: "ca", configuration: configuration)
    try makeLeaf("client", section: "client", by: "ca", configuration: configuration)
    try makeLeaf("stranger", section: "client", by: "other-ca", configuration: configuration)
  }

  /// Removes the files.
  func remove() {
    directory.remove()
  }

  private func makeCA(_ name: String, configuration: String) throws {
    try run([
      "req", "-x509", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
      "-keyout", directory.file("\(name).key"), "-out", directory.file("\(name).pem"), "-days", "2",
      "-subj", "/CN=ccsync test \(name)", "-config", configuration, "-extensions", "ca",
    ])
  }

  private func makeLeaf(_ name: String, section: String, by ca: String, configuration: String) throws {
    let request = directory.file("\(name).csr")
    try run([
      "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
      "-keyout", directory.file("\(name).key"), "-out", request, "-subj", "/CN=ccsync test \(name)",
      "-config", configuration,
    ])
    try run([
      "x509", "-req", "-in", request, "-CA", directory.file("\(ca).pem"), "-CAkey", directory.file("\(ca).key"),
      "-set_serial", String(UInt32.random(in: 1...UInt32.max)), "-days", "2", "-out", directory.file("\(name).pem"),
      "-extfile", configuration, "-extensions", section,
    ])
  }

  private func run(_ arguments: [String]) throws {
    guard let openssl = TestCertificates.openssl else { throw TestCertificatesError(message: "openssl not installed") }
    let outcome = try ChildProcess.run(openssl, arguments, deadline: .seconds(30))
    guard outcome.status == 0 else {
      throw TestCertificatesError(message: "openssl \(arguments.prefix(2).joined(separator: " ")): \(outcome.standardError)")
    }
  }
}

struct TestCertificatesError: Error, CustomStringConvertible {
  var message: String
  var description: String { message }
}
