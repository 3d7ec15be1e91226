import CCSyncJSON
import CCSyncSystem

/// Why one endpoint did not give an answer during a call. `Sendable`.
package struct EtcdEndpointFailure: Sendable, Hashable, CustomStringConvertible {
  /// The endpoint, `host:port`.
  package var endpoint: String
  /// What went wrong there, e.g. `request not delivered: connect '127.0.0.1:2379':
  /// Connection refused (errno 111)`.
  package var reason: String

  /// A failure of `endpoint` for `reason`.
  package init(endpoint: String, reason: String) {
    self.endpoint = endpoint
    self.reason = reason
  }

  package var description: String { "\(endpoint): \(reason)" }
}

/// Everything an etcd call can fail with. Messages read like `etcd 127.0.0.1:2379: ...`,
/// naming the member that answered (or, for ``unreachable(_:)``, every member and why).
/// `Sendable`, `Equatable` (for tests).
package enum EtcdError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The client's configuration is unusable: no endpoint, or one that does not parse.
  case invalidConfiguration(String)
  /// Every endpoint was tried within the deadline and none answered; each failure says why.
  case unreachable([EtcdEndpointFailure])
  /// The call's deadline passed before an answer: with endpoints left to try, or while the
  /// last attempt was still waiting. `failures` says what the endpoints tried did.
  case timeout(operation: String, deadline: Duration, failures: [EtcdEndpointFailure])
  /// The server refused the credentials (wrong user or password, authentication not
  /// possible), or a renewed token was refused again.
  case authenticationFailed(endpoint: String, message: String)
  /// The user has no permission for the key or operation.
  case permissionDenied(endpoint: String, message: String)
  /// The request is larger than the server accepts (`--max-request-bytes`); `limit` is the
  /// server's limit in bytes when it said it.
  case requestTooLarge(endpoint: String, limit: Int?, message: String)
  /// The revision asked for was compacted away. `revision` is the compaction revision when
  /// the server said it (a watch does): the oldest revision still readable.
  case compacted(endpoint: String, revision: Int64?)
  /// The lease does not exist (expired, revoked, or never granted).
  case leaseNotFound(endpoint: String, lease: Int64)
  /// A write was sent in full but no answer came back (the connection broke, or the member
  /// stopped answering): it may or may not have been applied. It is not repeated; read the
  /// key and compare (a compare-and-swap makes that safe).
  case outcomeUnknown(endpoint: String, operation: String, reason: String)
  /// Any other error the server answered with: its gRPC status code and message.
  case server(endpoint: String, code: Int, message: String)
  /// The reply is not what the gateway sends (not JSON, a field of the wrong kind).
  case malformedReply(endpoint: String, detail: String)
  /// A watch stream ended: the member shut down, the connection broke, or it stopped
  /// answering. Watch again from the next revision.
  case watchEnded(endpoint: String, reason: String)
  /// The server canceled a watch for a reason other than compaction or authentication.
  case watchCanceled(endpoint: String, reason: String)
  /// No TLS connection could be set up (``HTTPError/tlsRefused(endpoint:reason:)``): the
  /// server's certificate was not accepted (CA or name), the server refused this client's
  /// certificate or its lack of one, or the TLS settings cannot be used. Nothing was
  /// delivered; the call does not move on to another member (a certificate that fails to
  /// verify is a configuration error or an attack, not an outage to route around).
  case tlsRefused(endpoint: String, reason: String)

  package var description: String {
    switch self {
    case .invalidConfiguration(let reason):
      return "etcd: invalid configuration: \(reason)"
    case .unreachable(let failures):
      return "etcd unreachable: " + failures.map(\.description).joined(separator: "; ")
    case .timeout(let operation, let deadline, let failures):
      let tried = failures.isEmpty ? "" : " (" + failures.map(\.description).joined(separator: "; ") + ")"
      return "etcd \(operation): no answer within \(deadline)\(tried)"
    case .authenticationFailed(let endpoint, let message):
      return "etcd \(endpoint): authentication failed: \(message)"
    case .permissionDenied(let endpoint, let message):
      return "etcd \(endpoint): permission denied: \(message)"
    case .requestTooLarge(let endpoint, let limit, let message):
      let bound = limit.map { " (the server accepts at most \($0) bytes)" } ?? ""
      return "etcd \(endpoint): request too large\(bound): \(message)"
    case .compacted(let endpoint, let revision):
      let oldest = revision.map { " (compacted up to revision \($0))" } ?? ""
      return "etcd \(endpoint): the requested revision was compacted\(oldest)"
    case .leaseNotFound(let endpoint, let lease):
      return "etcd \(endpoint): lease \(lease) not found (expired, revoked or never granted)"
    case .outcomeUnknown(let endpoint, let operation, let reason):
      return "etcd \(endpoint): \(operation) sent, outcome unknown (\(reason)); read the key again before deciding"
    case .server(let endpoint, let code, let message):
      return "etcd \(endpoint): \(message) (gRPC \(EtcdError.codeName(code)))"
    case .malformedReply(let endpoint, let detail):
      return "etcd \(endpoint): malformed reply: \(detail)"
    case .watchEnded(let endpoint, let reason):
      return "etcd \(endpoint): watch stream ended: \(reason)"
    case .watchCanceled(let endpoint, let reason):
      return "etcd \(endpoint): watch canceled: \(reason)"
    case .tlsRefused(let endpoint, let reason):
      return "etcd \(endpoint): no TLS connection, nothing sent: \(reason)"
    }
  }

  /// The name of a gRPC status code, e.g. `14 Unavailable`.
  static func codeName(_ code: Int) -> String {
    let names = [
      "OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound", "AlreadyExists",
      "PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted", "OutOfRange",
      "Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated",
    ]
    return names.indices.contains(code) ? "\(code) \(names[code])" : "\(code)"
  }
}
