import CCSyncEtcd
import CCSyncSystem

/// Where a document lives on an etcd cluster: the members to try, the key, and the user to
/// authenticate as. Usable wherever a file location is (``StorageLocation/etcd(_:)``,
/// ``SharedDocument/init(etcd:)``). `Sendable`.
///
/// Written as a URL, as the `ccsync` command takes it:
/// `etcd://[HOST:PORT[,HOST:PORT...]]/KEY`, where KEY is everything after the first `/`
/// following the hosts, slashes included (`etcd://127.0.0.1:2379/cfg/app` is the key
/// `cfg/app`). With no hosts (`etcd:///cfg/app`) the endpoints come from `$ETCDCTL_ENDPOINTS`
/// (comma-separated `http://HOST:PORT`, `https://HOST:PORT` or `HOST:PORT`), else
/// `127.0.0.1:2379`, as etcdctl does; `$ETCDCTL_USER` (`user:password`) gives the
/// credentials, and `$ETCDCTL_CACERT`, `$ETCDCTL_CERT` and `$ETCDCTL_KEY` the TLS files.
///
/// ## TLS
///
/// An `https://HOST:PORT` endpoint is reached over TLS: the member's certificate must be
/// signed by a CA in ``caFile`` (the system's CA certificates when `nil`) and name HOST (its
/// IP address or DNS name), and ``certificateFile`` with ``privateKeyFile`` is presented when
/// the member asks for a client certificate. As with etcdctl, a `HOST:PORT` endpoint without
/// a scheme is TLS too when any of the three files is set, and `http://` never is. A
/// certificate that does not verify, or a client certificate the member refuses, fails with
/// ``StoreError/accessDenied(_:)`` and nothing is sent.
public struct EtcdLocation: Sendable, Hashable, CustomStringConvertible {
  /// The members' client URLs, tried in turn: `HOST:PORT`, `http://HOST:PORT` or
  /// `https://HOST:PORT`.
  public var endpoints: [String]
  /// The key holding the document.
  public var key: String
  /// The user to authenticate as, when the cluster has authentication on.
  public var user: String?
  /// That user's password.
  public var password: String?
  /// The PEM CA certificates TLS members are verified against (etcdctl's `--cacert`); the
  /// system's when `nil`.
  public var caFile: String?
  /// The client certificate (PEM) presented to TLS members (etcdctl's `--cert`).
  public var certificateFile: String?
  /// The client certificate's key (PEM, not encrypted; etcdctl's `--key`).
  public var privateKeyFile: String?

  /// A location from its parts. The TLS files are taken as given: the environment is read by
  /// ``init(url:)`` only.
  public init(
    endpoints: [String], key: String, user: String? = nil, password: String? = nil,
    caFile: String? = nil, certificateFile: String? = nil, privateKeyFile: String? = nil
  ) {
    self.endpoints = endpoints
    self.key = key
    self.user = user
    self.password = password
    self.caFile = caFile
    self.certificateFile = certificateFile
    self.privateKeyFile = privateKeyFile
  }

  /// Parses `etcd://[HOST:PORT[,HOST:PORT...]]/KEY`, taking the endpoints from
  /// `$ETCDCTL_ENDPOINTS` when the URL names none, the credentials from `$ETCDCTL_USER` and
  /// the TLS files from `$ETCDCTL_CACERT`, `$ETCDCTL_CERT` and `$ETCDCTL_KEY`.
  /// - Throws: ``StoreError/invalidLocation(_:reason:)`` naming what is wrong (a certificate
  ///   without its key counts).
  public init(url: String) throws(StoreError) {
    try self.init(url: url, environment: { Environment.value($0) })
  }

  /// ``init(url:)`` reading the environment through `environment` (tests pass their own).
  init(url: String, environment: (String) -> String?) throws(StoreError) {
    let scheme = "etcd://"
    guard url.hasPrefix(scheme) else { throw .invalidLocation(url, reason: "expected etcd://[HOST:PORT,...]/KEY") }
    let rest = url.dropFirst(scheme.count)
    guard let slash = rest.firstIndex(of: "/") else {
      throw .invalidLocation(url, reason: "no key: expected etcd://[HOST:PORT,...]/KEY")
    }
    let hosts = rest[..<slash]
    let key = String(rest[rest.index(after: slash)...])
    guard !key.isEmpty else { throw .invalidLocation(url, reason: "the key is empty") }
    let named = hosts.split(separator: ",", omittingEmptySubsequences: false).map { String($0) }
    if !hosts.isEmpty, named.contains(where: \.isEmpty) {
      throw .invalidLocation(url, reason: "an empty host in the list")
    }
    var endpoints = hosts.isEmpty ? EtcdLocation.environmentEndpoints(environment) : named
    endpoints = endpoints.map { $0.trimmingCharacters(in: " ") }
    for endpoint in endpoints where !EtcdLocation.isPlausibleEndpoint(endpoint) {
      throw .invalidLocation(url, reason: "'\(endpoint)' is not HOST:PORT")
    }
    var user: String?
    var password: String?
    if let credentials = environment("ETCDCTL_USER") {
      let parts = credentials.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
      user = String(parts[0])
      password = parts.count > 1 ? String(parts[1]) : ""
    }
    let caFile = environment("ETCDCTL_CACERT")
    let certificateFile = environment("ETCDCTL_CERT")
    let privateKeyFile = environment("ETCDCTL_KEY")
    if (certificateFile == nil) != (privateKeyFile == nil) {
      let (given, missing) = certificateFile == nil ? ("ETCDCTL_KEY", "ETCDCTL_CERT") : ("ETCDCTL_CERT", "ETCDCTL_KEY")
      throw .invalidLocation(url, reason: "$\(given) is set but not $\(missing): a client certificate needs its key")
    }
    self.init(
      endpoints: endpoints, key: key, user: user, password: password, caFile: caFile, certificateFile: certificateFile,
      privateKeyFile: privateKeyFile)
  }

  /// The TLS files, for the client.
  var tlsSettings: TLSSettings {
    TLSSettings(caFile: caFile, certificateFile: certificateFile, privateKeyFile: privateKeyFile)
  }

  /// How an etcd client reaches this location: its endpoints, user and TLS files, with the
  /// default deadlines. Code that makes a client of its own (not through a document) starts
  /// from this, so that it gets the same credentials and TLS.
  package var clientConfiguration: EtcdClient.Configuration {
    EtcdClient.Configuration(
      endpoints: endpoints, credentials: user.map { EtcdClient.Credentials(user: $0, password: password ?? "") },
      tls: tlsSettings)
  }

  /// `$ETCDCTL_ENDPOINTS`, else etcdctl's default `127.0.0.1:2379`.
  private static func environmentEndpoints(_ environment: (String) -> String?) -> [String] {
    guard let listed = environment("ETCDCTL_ENDPOINTS") else { return ["127.0.0.1:2379"] }
    let endpoints = listed.split(separator: ",").map { String($0) }.filter { !$0.isEmpty }
    return endpoints.isEmpty ? ["127.0.0.1:2379"] : endpoints
  }

  /// Whether `endpoint` looks like `HOST:PORT`, `http://HOST:PORT` or `https://HOST:PORT`
  /// (the client checks it fully when it connects).
  private static func isPlausibleEndpoint(_ endpoint: String) -> Bool {
    var rest = Substring(endpoint)
    for scheme in ["http://", "https://"] where rest.hasPrefix(scheme) { rest = rest.dropFirst(scheme.count) }
    if rest.hasSuffix("/") { rest = rest.dropLast() }
    guard !rest.isEmpty, !rest.contains("/"), !rest.contains(" ") else { return false }
    guard let colon = rest.lastIndex(of: ":") else { return true }  // a host alone: port 2379
    let port = rest[rest.index(after: colon)...]
    guard let number = Int(port), (1...65535).contains(number) else { return false }
    return colon != rest.startIndex
  }

  /// The location as a URL, with the endpoints it resolved to (never the password).
  public var description: String {
    // Strings appended to a string, rather than `joined(separator:)` or appending
    // substrings: in a short `ccsync get`, the first call of those generic functions cost
    // more (a run-time lookup of their associated types) than parsing the request's reply.
    var text = "etcd://"
    for (index, endpoint) in endpoints.enumerated() {
      if index > 0 { text.append(",") }
      text.append(endpoint.hasPrefix("http://") ? String(endpoint.dropFirst("http://".count)) : endpoint)
    }
    text.append("/")
    text.append(key)
    return text
  }
}

extension String {
  /// The string without leading and trailing `character`s.
  fileprivate func trimmingCharacters(in character: Character) -> String {
    var slice = Substring(self)
    while slice.first == character { slice = slice.dropFirst() }
    while slice.last == character { slice = slice.dropLast() }
    return String(slice)
  }
}
