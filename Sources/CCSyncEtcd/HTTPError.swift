import CCSyncJSON
import CCSyncSystem

/// What can go wrong with an HTTP exchange, split by what it means for the request: could
/// the server have acted on it or not. `Sendable`.
package enum HTTPError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The endpoint text does not parse (``HTTPEndpoint/init(parsing:defaultPort:)``).
  case invalidEndpoint(String, reason: String)
  /// The server cannot have acted on the request: no connection could be opened, or the
  /// connection failed before the request's last byte was handed to it (see
  /// ``HTTPClient`` for why that is enough). Safe to send again, to any server.
  case notDelivered(endpoint: String, reason: String, timedOut: Bool)
  /// The whole request was handed over, but no complete response came back: the
  /// connection was closed or reset, or the deadline passed. The server may or may not
  /// have acted on it.
  case noResponse(endpoint: String, reason: String, timedOut: Bool)
  /// The server sent something that is not HTTP/1.1 as this client reads it (or a part too
  /// large). The connection is dropped; the server did receive the request.
  case malformedResponse(endpoint: String, detail: String)
  /// No TLS connection could be set up as configured: this client did not accept the
  /// server's certificate, the server refused this client's (or its lack of one), or the CA
  /// file, certificate or key cannot be used. The server cannot have acted on the request
  /// (see ``TLSSocket``); repeating it would meet the same refusal.
  case tlsRefused(endpoint: String, reason: String)

  /// The endpoint the error is about (the endpoint text for ``invalidEndpoint(_:reason:)``).
  package var endpoint: String {
    switch self {
    case .invalidEndpoint(let text, _): text
    case .notDelivered(let endpoint, _, _), .noResponse(let endpoint, _, _), .malformedResponse(let endpoint, _),
      .tlsRefused(let endpoint, _):
      endpoint
    }
  }

  /// Whether a deadline passed.
  package var isTimeout: Bool {
    switch self {
    case .notDelivered(_, _, let timedOut), .noResponse(_, _, let timedOut): timedOut
    case .invalidEndpoint, .malformedResponse, .tlsRefused: false
    }
  }

  /// Why, without the endpoint: for messages that name the endpoint themselves.
  package var reason: String {
    switch self {
    case .invalidEndpoint(_, let reason): reason
    case .notDelivered(_, let reason, _): "request not delivered: \(reason)"
    case .noResponse(_, let reason, _): "no response: \(reason)"
    case .malformedResponse(_, let detail): "malformed response: \(detail)"
    case .tlsRefused(_, let reason): "request not delivered: \(reason)"
    }
  }

  package var description: String {
    switch self {
    case .invalidEndpoint(let text, let reason): "invalid endpoint '\(text)': \(reason)"
    default: "\(endpoint): \(reason)"
    }
  }
}
