import CCSyncJSON
import CCSyncSystem

extension EtcdClient {
  /// One gateway call: what it is, where it goes, and how it may be repeated.
  struct Call {
    /// The operation as errors name it: `range`, `put`, `lock`.
    var operation: String
    /// The gateway path, `/v3/kv/range`.
    var path: String
    /// The request body, JSON.
    var body: [UInt8]
    /// Whether it changes the store, so that an unknown outcome must not be repeated.
    var isWrite: Bool
    /// The call's own deadline, or `nil` for the configuration's.
    var deadline: Duration? = nil
    /// Whether the server may take the whole deadline by design (a lock waiting for its
    /// holder): then one attempt is not cut at ``Configuration/attemptTimeout``.
    var waitsOnServer = false
    /// Whether to send the token (not for authenticating itself).
    var authenticated = true
    /// The lease a `lease not found` error is about.
    var lease: Int64? = nil
    /// Ask this member only, with no failover (the status of one member).
    var onlyEndpoint: HTTPEndpoint? = nil
  }
}

extension EtcdClient.Call {
  /// A call whose body is `json`, printed compact.
  init(
    operation: String, path: String, body json: JSONValue, isWrite: Bool, deadline: Duration? = nil,
    waitsOnServer: Bool = false, authenticated: Bool = true, lease: Int64? = nil, onlyEndpoint: HTTPEndpoint? = nil
  ) {
    self.init(
      operation: operation, path: path, body: json.formattedBytes(.compact), isWrite: isWrite, deadline: deadline,
      waitsOnServer: waitsOnServer, authenticated: authenticated, lease: lease, onlyEndpoint: onlyEndpoint)
  }
}

extension EtcdClient {
  /// What one attempt on one endpoint came to.
  enum Attempt<Value> {
    /// The endpoint answered.
    case answered(Value)
    /// The endpoint failed in a way that lets the call try the next one.
    case failed(EtcdEndpointFailure)
    /// The member refused for the moment (no leader, overloaded) without acting: try the
    /// next one, and the whole list again after a pause if none answers.
    case refusedForNow(EtcdEndpointFailure)
    /// The member refused the token: authenticate again and repeat on the same endpoint,
    /// or throw the error when that was done already.
    case invalidToken(EtcdError)
    /// The call ends with this error.
    case fatal(EtcdError)
  }

  /// Runs `attempt` on the endpoints in turn, as described in the type's documentation.
  ///
  /// When a round over the endpoints ends without an answer but some member refused only
  /// for the moment (no leader during an election, overloaded), another round follows after
  /// a pause (25 ms, doubling up to 400 ms) while the deadline allows: a leader election
  /// takes a few election timeouts. A round where every endpoint failed to connect or
  /// answer ends the call at once with ``EtcdError/unreachable(_:)``.
  /// - Parameter attempt: one try on one endpoint, given the attempt's deadline and the
  ///   token to send.
  func withEndpoints<Value>(
    _ call: Call, _ attempt: (HTTPEndpoint, ContinuousClock.Instant, String?) -> Attempt<Value>
  ) throws(EtcdError) -> Value {
    let total = call.deadline ?? configuration.deadline
    let deadline = ContinuousClock.now + total
    var pause: Duration = .milliseconds(25)
    var renewed = false
    while true {
      var order = call.onlyEndpoint.map { [$0] } ?? endpointsInTurn()
      var failures: [EtcdEndpointFailure] = []
      var someRefusedForNow = false
      var position = 0
      while position < order.count {
        // The next endpoint tried is the first of those left to connect (the last one left
        // is simply tried).
        if order.count - position > 1 {
          switch connectedFirst(Array(order[position...]), deadline: deadline) {
          case .inOrder(let rest):
            order = Array(order[..<position]) + rest
          case .noneConnected(let unreachable):
            failures += unreachable
            position = order.count
            continue
          }
        }
        let endpoint = order[position]
        let now = ContinuousClock.now
        guard now < deadline else { throw .timeout(operation: call.operation, deadline: total, failures: failures) }
        let token = call.authenticated ? try currentToken(deadline: deadline) : nil
        let attemptDeadline = call.waitsOnServer ? deadline : min(deadline, now + configuration.attemptTimeout)
        switch attempt(endpoint, attemptDeadline, token) {
        case .answered(let value):
          prefer(endpoint)
          return value
        case .failed(let failure):
          failures.append(failure)
          position += 1
        case .refusedForNow(let failure):
          failures.append(failure)
          someRefusedForNow = true
          position += 1
        case .invalidToken(let error):
          guard !renewed, configuration.credentials != nil else { throw error }
          renewed = true
          try renewToken(replacing: token, deadline: deadline)
        case .fatal(let error):
          // The member took a write and went silent: start the next call elsewhere.
          if case .outcomeUnknown = error { avoid(endpoint) }
          throw error
        }
      }
      guard someRefusedForNow else {
        // Every endpoint was tried. If the call's own deadline cut the last attempt short,
        // the deadline is the reason to report.
        if ContinuousClock.now >= deadline { throw .timeout(operation: call.operation, deadline: total, failures: failures) }
        throw .unreachable(failures)
      }
      guard ContinuousClock.now + pause < deadline else {
        throw .timeout(operation: call.operation, deadline: total, failures: failures)
      }
      ContinuousClock.sleepThread(for: pause)
      pause = min(pause * 2, .milliseconds(400))
    }
  }

  /// What ``connectedFirst(_:deadline:)`` found.
  enum ConnectionOrder {
    /// The endpoints to try, the one that connected first in front.
    case inOrder([HTTPEndpoint])
    /// None connected within one attempt: why each failed.
    case noneConnected([EtcdEndpointFailure])
  }

  /// `order` with the endpoint that connects first in front, when the first one has no
  /// connection open yet (a new client, one whose last connection was closed, or the
  /// endpoints left after one failed): every endpoint is dialled, ``connectionStagger``
  /// apart (``HTTPClient/connectFirst(_:stagger:deadline:)``), so that an endpoint that is
  /// cut off, whose connection attempts get no answer, costs ``connectionStagger`` rather
  /// than a whole attempt. A single endpoint is left alone, and so is the order when a
  /// connection met a TLS refusal (the attempt itself reports it).
  func connectedFirst(_ order: [HTTPEndpoint], deadline: ContinuousClock.Instant) -> ConnectionOrder {
    guard order.count > 1, !http.hasIdleConnection(to: order[0]) else { return .inOrder(order) }
    let now = ContinuousClock.now
    switch http.connectFirst(order, stagger: Self.connectionStagger, deadline: min(deadline, now + configuration.attemptTimeout)) {
    case .connected(let endpoint):
      return .inOrder([endpoint] + order.filter { $0 != endpoint })
    case .failed(let errors):
      if errors.contains(where: { if case .tlsRefused = $0 { true } else { false } }) { return .inOrder(order) }
      return .noneConnected(errors.map { EtcdEndpointFailure(endpoint: $0.endpoint, reason: $0.reason) })
    }
  }

  /// How long each endpoint has to connect alone before the next one is dialled too: a
  /// connection to a member that answers takes well under a millisecond on a LAN, so 5 ms
  /// rarely opens a second one needlessly, and a cut-off first endpoint costs no more.
  static let connectionStagger: Duration = .milliseconds(5)

  /// Sends one unary call (`POST`, whole reply) and returns the reply object, for the calls
  /// whose replies are read as a `JSONObject` (leases, authentication, maintenance).
  func perform(_ call: Call) throws(EtcdError) -> EtcdAnswer {
    try exchange(call) { response, endpoint in
      switch EtcdReply(response) {
      case .success(let object): return .answered(EtcdAnswer(object: object, endpoint: endpoint.description))
      case .failure(let error): return serverFailure(error, from: endpoint, of: call)
      case .malformed(let detail): return malformed(detail, from: endpoint, of: call)
      }
    }
  }

  /// Sends one unary call and decodes its reply straight from the bytes as a `Value`
  /// (``EtcdScannedObject``), without a `JSONValue` tree: the key-value calls, whose replies
  /// carry documents. An error body is read as ``perform(_:)`` reads it.
  /// - Returns: the reply and the member that gave it.
  /// - Throws: ``EtcdError/malformedReply(endpoint:detail:)`` for a reply of another shape,
  ///   and what ``perform(_:)`` throws.
  func perform<Value: EtcdScannedObject>(_ call: Call, reading: Value.Type) throws(EtcdError) -> (value: Value, endpoint: String) {
    try exchange(call) { response, endpoint in
      if response.status == 200, EtcdReply.grpcStatus(of: response) == nil {
        do throws(MalformedReply) {
          if let value = try Value.decodeReply(response.body, inStream: false) {
            return .answered((value, endpoint.description))
          }
        } catch {
          if error.isSyntax { return malformed(error.detail, from: endpoint, of: call) }
          return .fatal(.malformedReply(endpoint: endpoint.description, detail: error.detail))
        }
      }
      switch EtcdReply(response) {
      case .failure(let error): return serverFailure(error, from: endpoint, of: call)
      case .malformed(let detail): return malformed(detail, from: endpoint, of: call)
      case .success:
        return malformed("an error member the client cannot read", from: endpoint, of: call)
      }
    }
  }

  /// Sends `call`'s request to the endpoints in turn (``withEndpoints(_:_:)``) and asks
  /// `interpret` what each response means.
  private func exchange<Value>(
    _ call: Call, _ interpret: (HTTPResponse, HTTPEndpoint) -> Attempt<Value>
  ) throws(EtcdError) -> Value {
    try withEndpoints(call) { endpoint, deadline, token in
      let request = HTTPRequest(path: call.path, headers: EtcdClient.headers(token: token), body: call.body)
      let response: HTTPResponse
      do throws(HTTPError) {
        response = try http.send(request, to: endpoint, deadline: deadline, idempotent: !call.isWrite)
      } catch {
        return transportFailure(error, of: call)
      }
      return interpret(response, endpoint)
    }
  }

  /// What a reply that cannot be read means for `call`: an answer to a write that cannot be
  /// read says nothing of whether it applied; a read is tried on the next member.
  private func malformed<Value>(_ detail: String, from endpoint: HTTPEndpoint, of call: Call) -> Attempt<Value> {
    call.isWrite
      ? .fatal(.outcomeUnknown(endpoint: endpoint.description, operation: call.operation, reason: "malformed reply: \(detail)"))
      : .failed(EtcdEndpointFailure(endpoint: endpoint.description, reason: "malformed reply: \(detail)"))
  }

  /// The request header fields: JSON, and the token when there is one.
  static func headers(token: String?) -> [HTTPHeader] {
    guard let token else { return jsonHeaders }
    return jsonHeaders + [HTTPHeader(name: "Authorization", value: token)]
  }

  /// `Content-Type: application/json` alone, made once: most calls send no token.
  private static let jsonHeaders = [HTTPHeader(name: "Content-Type", value: "application/json")]

  /// What an HTTP failure means for `call`: try the next endpoint, or (a write that may
  /// have been applied) stop with ``EtcdError/outcomeUnknown(endpoint:operation:reason:)``,
  /// or (TLS refused) stop with ``EtcdError/tlsRefused(endpoint:reason:)``.
  func transportFailure<Value>(_ error: HTTPError, of call: Call) -> Attempt<Value> {
    let failure = EtcdEndpointFailure(endpoint: error.endpoint, reason: error.reason)
    if case .notDelivered = error { return .failed(failure) }
    if case .tlsRefused(let endpoint, let reason) = error { return .fatal(.tlsRefused(endpoint: endpoint, reason: reason)) }
    return call.isWrite ? .fatal(.outcomeUnknown(endpoint: error.endpoint, operation: call.operation, reason: error.reason)) : .failed(failure)
  }

  /// What a server error means for `call`: renew the token, try the next endpoint, or stop.
  func serverFailure<Value>(_ error: EtcdServerError, from endpoint: HTTPEndpoint, of call: Call) -> Attempt<Value> {
    let etcdError = error.error(endpoint: endpoint.description, lease: call.lease)
    // "user name is empty": authentication was turned on after this client found it off.
    if error.isInvalidToken || (error.message.contains("user name is empty") && configuration.credentials != nil) {
      return .invalidToken(etcdError)
    }
    let reason = "\(error.message) (gRPC \(EtcdError.codeName(error.code)))"
    if call.isWrite ? error.refusedBeforeProcessing : error.anotherMemberMayAnswer {
      return .refusedForNow(EtcdEndpointFailure(endpoint: endpoint.description, reason: reason))
    }
    // A write the member gave up on after handing it to raft (timed out waiting for it to
    // apply, the leader lost, the server stopping, the gateway out of time) may still be
    // committed: its outcome is unknown, never "not written" (docs/ARCHITECTURE.md, "Beyond
    // one machine: the etcd store", an unknown outcome).
    if call.isWrite && error.mayHaveBeenProposed {
      return .fatal(.outcomeUnknown(endpoint: endpoint.description, operation: call.operation, reason: reason))
    }
    return .fatal(etcdError)
  }

  /// The endpoints, starting with the preferred one.
  func endpointsInTurn() -> [HTTPEndpoint] {
    let first = preferredEndpoint.withLock { $0 }
    if first == 0 { return endpoints }
    return endpoints.indices.map { endpoints[(first + $0) % endpoints.count] }
  }

  /// Makes `endpoint` the one the next call starts with.
  func prefer(_ endpoint: HTTPEndpoint) {
    guard let index = endpoints.firstIndex(of: endpoint) else { return }
    preferredEndpoint.withLock { $0 = index }
  }

  /// Makes the next call start after `endpoint`, when it would have started there.
  func avoid(_ endpoint: HTTPEndpoint) {
    guard let index = endpoints.firstIndex(of: endpoint) else { return }
    preferredEndpoint.withLock { if $0 == index { $0 = (index + 1) % endpoints.count } }
  }
}

/// A successful reply and the member that gave it.
struct EtcdAnswer {
  /// The reply object.
  var object: JSONObject
  /// The member, `host:port`.
  var endpoint: String

  /// Decodes the reply, turning a shape error into ``EtcdError/malformedReply(endpoint:detail:)``.
  func decode<Value>(_ body: (JSONObject) throws(MalformedReply) -> Value) throws(EtcdError) -> Value {
    do {
      return try body(object)
    } catch {
      throw .malformedReply(endpoint: endpoint, detail: error.detail)
    }
  }
}
