import CCSyncJSON
import CCSyncSystem

/// Which CA certificates to trust and which client certificate to present on `https://`
/// endpoints: etcdctl's `--cacert`, `--cert` and `--key`. `Sendable`.
package struct TLSSettings: Sendable, Hashable {
  /// The PEM CA certificates servers are verified against; the system's default locations
  /// when `nil`.
  package var caFile: String?
  /// The client certificate (PEM, its chain after it), presented when the server asks.
  package var certificateFile: String?
  /// The client certificate's key (PEM, not encrypted).
  package var privateKeyFile: String?

  /// Settings with the given files; none gives the system's CA certificates and no client
  /// certificate.
  package init(caFile: String? = nil, certificateFile: String? = nil, privateKeyFile: String? = nil) {
    self.caFile = caFile
    self.certificateFile = certificateFile
    self.privateKeyFile = privateKeyFile
  }

  /// Whether any file is given.
  package var isEmpty: Bool { caFile == nil && certificateFile == nil && privateKeyFile == nil }
}

/// Opens `http://` endpoints as plain TCP and `https://` ones as TLS over TCP
/// (``TLSSocket``): the server's certificate verified against ``settings``' CA certificates
/// (or the system's) and its name, the client certificate presented when the settings have
/// one.
///
/// The OpenSSL context is made on the first `https://` connection and shared by all later
/// ones, so a client that only ever talks `http://` never loads OpenSSL. A failure to make it
/// is not kept: the next connection tries again (a CA file put in place meanwhile works).
/// `Sendable`.
package struct TLSConnector: HTTPConnector {
  /// The CA certificates and client certificate.
  package let settings: TLSSettings
  /// The context, once made.
  private let context = Protected<TLSContext?>(nil)

  /// A connector with `settings`.
  package init(settings: TLSSettings = TLSSettings()) {
    self.settings = settings
  }

  /// Opens a stream to `endpoint`: TLS when it is `https://`, plain TCP otherwise.
  /// - Throws: `TransportError`; a TLS refusal or unusable settings have
  ///   ``TransportError/isTLSRefusal`` set.
  package func connect(to endpoint: HTTPEndpoint, deadline: ContinuousClock.Instant) throws(TransportError) -> any HTTPByteStream {
    guard endpoint.isSecure else { return try PlainTCPConnector().connect(to: endpoint, deadline: deadline) }
    do {
      return try TLSSocket.connect(host: endpoint.host, port: endpoint.port, context: try madeContext(), deadline: deadline)
    } catch {
      throw TransportError(error)
    }
  }

  /// The shared context, made on first use.
  private func madeContext() throws(TLSError) -> TLSContext {
    let settings = self.settings
    return try context.withLock { context throws(TLSError) in
      if let context { return context }
      let made = try TLSContext(caFile: settings.caFile, certificateFile: settings.certificateFile, keyFile: settings.privateKeyFile)
      context = made
      return made
    }
  }
}

/// A TLS connection is an HTTP byte stream (see ``TLSSocket`` for how its `send` keeps the
/// contract).
extension TLSSocket: TransportSocket {
  package typealias Failure = TLSError

  package static func transportError(_ failure: TLSError) -> TransportError {
    TransportError(failure)
  }
}
