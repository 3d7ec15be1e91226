import CCSyncJSON
import CCSyncSystem

// The byte transport under the HTTP client: plain TCP (PlainTCPConnector) and TLS over TCP
// (TLSConnector, TLSConnector.swift); nothing above this file knows which.

/// Why a transport operation failed, as a sentence, and whether it was a deadline.
/// `Sendable`.
package struct TransportError: Error, Sendable, Equatable, CustomStringConvertible {
  /// What failed and why, e.g. `connect '127.0.0.1:2379': Connection refused (errno 111)`.
  package var description: String
  /// Whether the operation's deadline passed (rather than the peer refusing or failing).
  package var isTimeout: Bool
  /// Whether TLS could not be set up as configured (``HTTPError/tlsRefused(endpoint:reason:)``):
  /// a certificate not accepted either way, or unusable TLS settings. Nothing the server
  /// could act on went through.
  package var isTLSRefusal: Bool

  /// An error with its text.
  package init(description: String, isTimeout: Bool, isTLSRefusal: Bool = false) {
    self.description = description
    self.isTimeout = isTimeout
    self.isTLSRefusal = isTLSRefusal
  }

  /// The failure of a socket call.
  package init(_ error: SystemError) {
    self.init(description: error.description, isTimeout: error.errorNumber == .timedOut)
  }

  /// The failure of a TLS connection: a refusal for a handshake that failed or unusable
  /// settings; a connection failure otherwise (OpenSSL missing included: the server is not
  /// reachable securely from this machine, as one that does not answer is not).
  package init(_ error: TLSError) {
    switch error.kind {
    case .refused, .settings: self.init(description: error.description, isTimeout: false, isTLSRefusal: true)
    case .unavailable: self.init(description: error.description, isTimeout: false)
    case .connection(let timedOut): self.init(description: error.description, isTimeout: timedOut)
    }
  }

  /// The error for a request to `endpoint` that this failure stopped before its last byte
  /// went out: ``HTTPError/notDelivered(endpoint:reason:timedOut:)``, or
  /// ``HTTPError/tlsRefused(endpoint:reason:)``.
  func notDelivered(to endpoint: HTTPEndpoint) -> HTTPError {
    isTLSRefusal
      ? .tlsRefused(endpoint: endpoint.description, reason: description)
      : .notDelivered(endpoint: endpoint.description, reason: description, timedOut: isTimeout)
  }
}

/// An open, two-way byte stream to one server.
///
/// The contract the HTTP client's retry rule depends on (see ``HTTPClient``): when
/// ``write(_:deadline:)`` throws, the last byte of what it was given has not been handed to
/// the network, so the peer can never receive the whole message. A TLS stream must keep it
/// (a record is written in full or the call fails before its last byte goes out).
///
/// `Sendable` only for ``interrupt()`` and ``close()``, which any thread may call; reads and
/// writes come from one thread at a time.
package protocol HTTPByteStream: AnyObject, Sendable {
  /// Writes every byte of `bytes`, waiting at most until `deadline`.
  /// - Throws: `TransportError` (reset, closed, deadline passed).
  func write(_ bytes: [UInt8], deadline: ContinuousClock.Instant) throws(TransportError)

  /// Reads what has arrived, up to `buffer.count` bytes, waiting for something at most
  /// until `deadline`.
  /// - Returns: the number of bytes read, 0 at the end of the stream.
  /// - Throws: `TransportError` (reset, deadline passed).
  func read(into buffer: UnsafeMutableRawBufferPointer, deadline: ContinuousClock.Instant) throws(TransportError) -> Int

  /// Whether the stream has something to read right now: on an idle kept-alive connection,
  /// the sign that the server closed it (or sent something unasked).
  var hasPendingInput: Bool { get }

  /// Makes a read blocked in another thread return the end of the stream at once. Any thread.
  func interrupt()

  /// Closes the stream. Any thread; a second call does nothing.
  func close()
}

/// Opens ``HTTPByteStream``s to endpoints. `Sendable`.
package protocol HTTPConnector: Sendable {
  /// Opens a stream to `endpoint`, waiting at most until `deadline`.
  /// - Throws: `TransportError` (name not resolved, refused, deadline passed).
  func connect(to endpoint: HTTPEndpoint, deadline: ContinuousClock.Instant) throws(TransportError) -> any HTTPByteStream
}

/// Plain TCP, no encryption: the transport for `http://` endpoints; an `https://` one fails
/// to connect (``TLSConnector`` serves both). `Sendable`.
package struct PlainTCPConnector: HTTPConnector {
  /// Creates the connector; it has no settings.
  package init() {}

  /// Opens a TCP connection to `endpoint` (see ``TCPSocket/connect(host:port:deadline:)``).
  package func connect(to endpoint: HTTPEndpoint, deadline: ContinuousClock.Instant) throws(TransportError) -> any HTTPByteStream {
    guard !endpoint.isSecure else {
      throw TransportError(description: "https://\(endpoint): this connection has no TLS", isTimeout: false, isTLSRefusal: true)
    }
    do {
      let socket = try TCPSocket.connect(host: endpoint.host, port: endpoint.port, deadline: deadline)
      try socket.makeReadsBlock()
      return socket
    } catch {
      throw TransportError(error)
    }
  }
}

/// A socket that is an HTTP byte stream once its failures are ``TransportError``s:
/// ``TCPSocket`` and ``TLSSocket``. Their `send` throws before the last byte is handed to the
/// kernel or not at all, as ``HTTPByteStream`` requires.
package protocol TransportSocket: HTTPByteStream {
  /// What the socket's calls throw.
  associatedtype Failure: Error
  /// Sends every byte of `bytes`.
  func send(_ bytes: [UInt8], deadline: ContinuousClock.Instant) throws(Failure)
  /// Reads what has arrived; 0 at the end of the stream.
  func receive(into buffer: UnsafeMutableRawBufferPointer, deadline: ContinuousClock.Instant) throws(Failure) -> Int
  /// `failure` as the HTTP client sees it.
  static func transportError(_ failure: Failure) -> TransportError
}

extension TransportSocket {
  /// Sends every byte (`send(_:deadline:)`).
  package func write(_ bytes: [UInt8], deadline: ContinuousClock.Instant) throws(TransportError) {
    do {
      try send(bytes, deadline: deadline)
    } catch {
      throw Self.transportError(error)
    }
  }

  /// Reads what has arrived (`receive(into:deadline:)`).
  package func read(into buffer: UnsafeMutableRawBufferPointer, deadline: ContinuousClock.Instant) throws(TransportError) -> Int {
    do {
      return try receive(into: buffer, deadline: deadline)
    } catch {
      throw Self.transportError(error)
    }
  }
}

/// A TCP socket is a plain HTTP byte stream.
extension TCPSocket: TransportSocket {
  package typealias Failure = SystemError

  package static func transportError(_ failure: SystemError) -> TransportError {
    TransportError(failure)
  }
}
