import CCSyncJSON
import CCSyncSystem

/// A client of an etcd v3 cluster through its JSON gateway (`POST /v3/...`), over the
/// keep-alive ``HTTPClient``.
///
/// ## Endpoints, deadlines and failover
///
/// Each call has a deadline (``Configuration/deadline``, 5 s unless the call says
/// otherwise) and tries the endpoints in turn, starting with the last one that answered.
/// One attempt waits at most ``Configuration/attemptTimeout`` (2 s), so a member that
/// stopped answering (`SIGSTOP`, a partition) costs that much and the call moves on; it
/// never hangs. Before an attempt on an endpoint with no connection open (a new client's
/// first, or the next after one failed), the endpoints not yet tried are dialled
/// ``connectionStagger`` apart and the first that connects is tried first, so an endpoint
/// that is cut off costs a few milliseconds, not an attempt. When every endpoint failed the call throws ``EtcdError/unreachable(_:)``
/// naming each and why; when the call's deadline ran out first (endpoints left untried, or
/// the last attempt cut short by it), ``EtcdError/timeout(operation:deadline:failures:)``.
///
/// Reads (range, watch creation, status, authenticate, keep-alive) move on after any
/// failure. Writes (put, delete, transactions with a put or delete, lease grant and revoke,
/// lock, unlock) move on only when the member cannot have acted: the request was not
/// delivered (``HTTPClient``'s rules) or the member refused it before proposing it (no
/// leader, overloaded). A write sent in full with no answer fails with
/// ``EtcdError/outcomeUnknown(endpoint:operation:reason:)`` and is not repeated; the next
/// call starts at the following endpoint.
///
/// ## Authentication
///
/// With ``Configuration/credentials`` the client authenticates on first use and sends the
/// token in the `Authorization` header (the bare token: etcd takes no `Bearer`). A token the
/// member refuses (expired `--auth-token-ttl`, or the member restarted) is renewed once and
/// the call repeated: the member refused it before acting, so a write is safe to repeat.
///
/// ## TLS
///
/// `https://` endpoints, and `host:port` ones when ``Configuration/tls`` names a file (as
/// etcdctl decides), are reached over TLS (``TLSConnector``). A TLS refusal (the member's
/// certificate not accepted, this client's refused, the TLS files unusable) ends the call at
/// once with ``EtcdError/tlsRefused(endpoint:reason:)``: nothing was delivered, and another
/// member would be judged by the same settings.
///
/// `Sendable`: any number of threads may call at once (each call gets its own connection).
package final class EtcdClient: Sendable {
  /// A user name and password for `/v3/auth/authenticate`. `Sendable`.
  package struct Credentials: Sendable, Hashable {
    /// The etcd user.
    package var user: String
    /// Its password.
    package var password: String

    /// Credentials for `user`.
    package init(user: String, password: String) {
      self.user = user
      self.password = password
    }
  }

  /// How the client reaches the cluster. `Sendable`.
  package struct Configuration: Sendable {
    /// The members' client URLs: `host:port`, `http://host:port` or `https://host:port`
    /// (port 2379 when none). `host:port` is TLS when ``tls`` names a file, as etcdctl
    /// decides it.
    package var endpoints: [String]
    /// The user to authenticate as, when the cluster has authentication on.
    package var credentials: Credentials?
    /// How long a call may take in all, unless the call gives its own deadline.
    package var deadline: Duration
    /// How long one attempt on one endpoint may take before the call moves on; calls that
    /// wait on the server by design (a lock) are bounded by their deadline only.
    package var attemptTimeout: Duration
    /// The CA certificates and client certificate for TLS endpoints.
    package var tls: TLSSettings
    /// How connections are opened: a ``TLSConnector`` with ``tls`` unless given.
    package var connector: (any HTTPConnector)?
    /// The largest reply accepted, in bytes.
    package var maximumReplySize: Int

    /// A configuration with the given endpoints and defaults for the rest.
    package init(
      endpoints: [String], credentials: Credentials? = nil, deadline: Duration = .seconds(5),
      attemptTimeout: Duration = .seconds(2), tls: TLSSettings = TLSSettings(), connector: (any HTTPConnector)? = nil,
      maximumReplySize: Int = 256 << 20
    ) {
      self.endpoints = endpoints
      self.credentials = credentials
      self.deadline = deadline
      self.attemptTimeout = attemptTimeout
      self.tls = tls
      self.connector = connector
      self.maximumReplySize = maximumReplySize
    }
  }

  /// The settings the client was made with.
  package let configuration: Configuration
  /// The parsed endpoints, in configuration order.
  package let endpoints: [HTTPEndpoint]
  /// The keep-alive HTTP client all calls go through.
  let http: HTTPClient
  /// Index of the endpoint calls start with: the last one that answered.
  let preferredEndpoint = Protected(0)
  /// The authentication token; held while authenticating, so one thread does it for all.
  let tokenState = Protected(TokenState.unknown)

  /// Creates a client; no connection is made until the first call.
  /// - Throws: ``EtcdError/invalidConfiguration(_:)`` for an empty endpoint list or an
  ///   endpoint that does not parse.
  package init(_ configuration: Configuration) throws(EtcdError) {
    guard !configuration.endpoints.isEmpty else { throw .invalidConfiguration("no endpoint given") }
    var endpoints: [HTTPEndpoint] = []
    for text in configuration.endpoints {
      do {
        endpoints.append(try HTTPEndpoint(parsing: text, defaultPort: 2379, secureByDefault: !configuration.tls.isEmpty))
      } catch {
        throw .invalidConfiguration(error.description)
      }
    }
    self.configuration = configuration
    self.endpoints = endpoints
    http = HTTPClient(
      connector: configuration.connector ?? TLSConnector(settings: configuration.tls), maximumBodySize: configuration.maximumReplySize)
  }

  /// Creates a client for `endpoints` with the default deadlines.
  /// - Throws: ``EtcdError/invalidConfiguration(_:)``.
  package convenience init(endpoints: [String], credentials: Credentials? = nil) throws(EtcdError) {
    try self.init(Configuration(endpoints: endpoints, credentials: credentials))
  }

  deinit {
    http.closeIdleConnections()
  }

  /// Closes the kept-alive connections; the next call opens new ones.
  package func closeConnections() {
    http.closeIdleConnections()
  }
}
