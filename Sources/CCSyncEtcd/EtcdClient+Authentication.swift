import CCSyncJSON
import CCSyncSystem

/// What the client knows about its authentication token.
enum TokenState: Sendable {
  /// Not asked yet (or to be asked again).
  case unknown
  /// The cluster has authentication off: calls go without a token.
  case notNeeded
  /// The token to send.
  case token(String)

  /// The token to send, if any.
  var token: String? {
    if case .token(let token) = self { return token }
    return nil
  }
}

extension EtcdClient {
  /// Authenticates with the configured credentials now, replacing any cached token.
  ///
  /// Calls authenticate on their own when they need to; this is for checking credentials
  /// early (at start-up) and for tests.
  /// - Returns: the token, or `nil` when the cluster has authentication off (or no
  ///   credentials are configured).
  /// - Throws: ``EtcdError/authenticationFailed(endpoint:message:)`` for a wrong user or
  ///   password; the failover errors of any call.
  @discardableResult
  package func authenticate(deadline: Duration? = nil) throws(EtcdError) -> String? {
    guard let credentials = configuration.credentials else { return nil }
    let end = ContinuousClock.now + (deadline ?? configuration.deadline)
    return try tokenState.withLock { (state: inout TokenState) throws(EtcdError) -> String? in
      state = try requestToken(credentials, deadline: end)
      return state.token
    }
  }

  /// The token to send with a call, authenticating first when none is known yet.
  /// - Throws: what ``authenticate(deadline:)`` throws.
  func currentToken(deadline: ContinuousClock.Instant) throws(EtcdError) -> String? {
    guard let credentials = configuration.credentials else { return nil }
    return try tokenState.withLock { (state: inout TokenState) throws(EtcdError) -> String? in
      if case .unknown = state { state = try requestToken(credentials, deadline: deadline) }
      return state.token
    }
  }

  /// Authenticates again because a member refused `refused`, unless another thread has
  /// already replaced that token meanwhile (then its new token is used).
  func renewToken(replacing refused: String?, deadline: ContinuousClock.Instant) throws(EtcdError) {
    guard let credentials = configuration.credentials else { return }
    try tokenState.withLock { (state: inout TokenState) throws(EtcdError) in
      if let current = state.token, current != refused { return }
      state = try requestToken(credentials, deadline: deadline)
    }
  }

  /// Asks for a token (`/v3/auth/authenticate`, `{"name","password"}` to `{"token"}`).
  /// Authentication off (`authentication is not enabled`) gives ``TokenState/notNeeded``.
  private func requestToken(_ credentials: Credentials, deadline: ContinuousClock.Instant) throws(EtcdError) -> TokenState {
    let remaining = deadline - .now
    guard remaining > .zero else {
      throw .timeout(operation: "authenticate", deadline: configuration.deadline, failures: [])
    }
    // Authenticating twice does no harm: a read as far as repeating goes.
    let call = Call(
      operation: "authenticate", path: "/v3/auth/authenticate",
      body: ["name": .string(credentials.user), "password": .string(credentials.password)],
      isWrite: false, deadline: remaining, authenticated: false)
    do {
      let answer = try perform(call)
      let token = try answer.decode { object throws(MalformedReply) in try object.string("token") }
      return token.isEmpty ? .notNeeded : .token(token)
    } catch {
      if case .server(_, _, let message) = error, message.contains("authentication is not enabled") {
        return .notNeeded
      }
      throw error
    }
  }
}
