import CCSyncJSON
import CCSyncSystem

/// An HTTP/1.1 client that keeps its connections alive: a request goes out on an idle
/// connection to its endpoint when there is one, on a new one otherwise, and the connection
/// goes back to the pool after a complete response. Used one request after another (as the
/// etcd client is), that is one kept-alive connection per endpoint; concurrent callers each
/// get their own connection, and up to ``maximumIdlePerEndpoint`` stay open afterwards.
///
/// ## When a request is sent again
///
/// A request is sent a second time only when the server cannot have acted on the first:
///
/// 1. Before an idle connection is reused, it is checked with a zero-timeout `poll`: if it
///    is readable, the server closed it (end of stream, reset) or sent something unasked;
///    it is dropped unused and another is taken or opened. Nothing was sent.
/// 2. A connection that cannot be opened (resolution failed, refused, no answer to the
///    handshake) carried nothing: ``HTTPError/notDelivered(endpoint:reason:timedOut:)``,
///    which the caller may repeat anywhere, writes included.
/// 3. A write that fails does so before the request's last byte was handed to the kernel
///    (``HTTPByteStream``'s contract), so the server never has the whole request. The body
///    is one JSON object whose closing brace is its last byte, and the etcd gateway only
///    acts on a body it decoded completely: the request was not processed. Also
///    `notDelivered`. On a reused connection it is repeated once, at once, on a fresh
///    connection (the server closed the idle connection just as the request went out).
/// 4. Once the whole request was handed over, any failure before a complete response (end
///    of stream, reset, deadline) leaves the outcome unknown:
///    ``HTTPError/noResponse(endpoint:reason:timedOut:)``. It is repeated (once, on a fresh
///    connection) only if the caller says the request is idempotent, the connection was a
///    reused one, not a byte of the response had arrived, and no deadline passed: the
///    server's close of an idle connection racing the request, which rule 1 cannot see.
///    A non-idempotent request is never repeated after its last byte left.
/// 5. A TLS refusal (``HTTPError/tlsRefused(endpoint:reason:)``) is never repeated: the
///    server did not read the request, and would refuse it again.
///
/// `Sendable`: the pool is guarded by a lock; a connection is used by one caller at a time.
package final class HTTPClient: Sendable {
  /// Opens the byte streams (plain TCP, TLS).
  package let connector: any HTTPConnector
  /// A longer response body fails as ``HTTPError/malformedResponse(endpoint:detail:)``.
  package let maximumBodySize: Int
  /// Idle connections kept per endpoint beyond those in use.
  package let maximumIdlePerEndpoint = 4
  /// Idle connections by endpoint, the most recently used last.
  let idle = Protected(HTTPIdleConnections())

  /// Creates a client with an empty pool.
  /// - Parameters:
  ///   - connector: how connections are opened.
  ///   - maximumBodySize: the largest response body accepted (256 MiB by default).
  package init(connector: any HTTPConnector = TLSConnector(), maximumBodySize: Int = 256 << 20) {
    self.connector = connector
    self.maximumBodySize = maximumBodySize
  }

  /// Sends `request` to `endpoint` and reads the whole response, repeating it only as the
  /// rules above allow.
  /// - Parameters:
  ///   - deadline: when to give up, for connecting, writing and reading together.
  ///   - idempotent: whether sending it twice does no harm (a read), which allows rule 4's
  ///     repeat.
  /// - Throws: `HTTPError`: `notDelivered` (nothing acted on), `noResponse` (outcome
  ///   unknown), `malformedResponse`.
  package func send(
    _ request: HTTPRequest, to endpoint: HTTPEndpoint, deadline: ContinuousClock.Instant, idempotent: Bool
  ) throws(HTTPError) -> HTTPResponse {
    var repeated = false
    while true {
      let connection = try checkOut(endpoint, deadline: deadline)
      let reused = connection.completedExchanges > 0
      do {
        let response = try connection.exchange(request, deadline: deadline, maximumBodySize: maximumBodySize)
        checkIn(connection)
        return response
      } catch {
        connection.close()
        guard reused, !repeated else { throw error }
        switch error {
        case .notDelivered(_, _, timedOut: false):
          break
        case .noResponse(_, _, timedOut: false) where idempotent && connection.responseBytesReceived == 0:
          break
        default:
          throw error
        }
        repeated = true
      }
    }
  }

  /// Sends `request` on a new connection of its own and reads the response head, leaving
  /// the body to be read as it arrives (a watch). The connection never returns to the pool.
  /// - Throws: `HTTPError` as ``send(_:to:deadline:idempotent:)``, without any repeat.
  package func openStream(
    _ request: HTTPRequest, to endpoint: HTTPEndpoint, deadline: ContinuousClock.Instant, maximumMessageSize: Int
  ) throws(HTTPError) -> HTTPStreamingResponse {
    let connection = try connect(endpoint, deadline: deadline)
    do {
      try connection.send(request, deadline: deadline)
      let head = try connection.readHead(deadline: deadline)
      return HTTPStreamingResponse(connection: connection, head: head, maximumMessageSize: maximumMessageSize)
    } catch {
      connection.close()
      throw error
    }
  }

  /// Closes the idle connections to `endpoint`, or to every endpoint when `nil`.
  package func closeIdleConnections(to endpoint: HTTPEndpoint? = nil) {
    let closing = idle.withLock { $0.removeAll(for: endpoint) }
    for connection in closing { connection.close() }
  }

  /// For each idle connection to `endpoint` in the pool, how many requests it has carried
  /// (for tests and diagnostics: one connection with a growing count is keep-alive at work).
  package func idleConnectionUses(to endpoint: HTTPEndpoint) -> [Int] {
    idle.withLock { $0.connections(to: endpoint).map(\.completedExchanges) }
  }

  /// An idle connection to `endpoint` that the server has not closed (rule 1), or a new one.
  private func checkOut(_ endpoint: HTTPEndpoint, deadline: ContinuousClock.Instant) throws(HTTPError) -> HTTPConnection {
    while let candidate = idle.withLock({ $0.popLast(for: endpoint) }) {
      if !candidate.stream.hasPendingInput { return candidate }
      candidate.close()
    }
    return try connect(endpoint, deadline: deadline)
  }

  /// Puts `connection` back in the pool when it can carry another request and there is room.
  func checkIn(_ connection: HTTPConnection) {
    guard connection.isReusable else {
      connection.close()
      return
    }
    let kept = idle.withLock { $0.append(connection, limit: maximumIdlePerEndpoint) }
    if !kept { connection.close() }
  }

  /// Opens a new connection (rule 2: a failure here means nothing was sent).
  private func connect(_ endpoint: HTTPEndpoint, deadline: ContinuousClock.Instant) throws(HTTPError) -> HTTPConnection {
    do {
      return HTTPConnection(endpoint: endpoint, stream: try connector.connect(to: endpoint, deadline: deadline))
    } catch {
      throw error.notDelivered(to: endpoint)
    }
  }
}
