import CCSyncSystem

extension HTTPClient {
  /// What ``connectFirst(_:stagger:deadline:)`` came to.
  package enum ConnectionRace: Sendable {
    /// A connection to this endpoint is in the pool, fresh, for the next request to it.
    case connected(HTTPEndpoint)
    /// No endpoint connected before the deadline: why each failed (`notDelivered`, or
    /// `tlsRefused`), in the order given, an endpoint still trying at the deadline as
    /// timed out.
    case failed([HTTPError])
  }

  /// Connects to `endpoints` at once, staggered happy-eyeballs style, and keeps the first
  /// connection made: the first endpoint gets `stagger` to connect alone, then the next one
  /// starts too, and so on (at once when all started so far have failed). The winner's
  /// connection goes into the pool, where the next ``send(_:to:deadline:idempotent:)`` to
  /// it takes it; a later connection goes there too, or is closed when the pool is full.
  ///
  /// This is how a new client gets past an endpoint that is cut off (its packets dropped, so
  /// a connection attempt waits for its whole deadline) without waiting for it: etcd's own
  /// client dials every endpoint at once. Nothing is sent on any connection here, so it is
  /// safe before a write. A connection attempt still under way when this returns goes on in
  /// the background, on its own thread, until it connects or `deadline` passes.
  /// - Parameters:
  ///   - endpoints: in order of preference.
  ///   - stagger: how long each endpoint has alone before the next one starts.
  ///   - deadline: when every attempt gives up.
  package func connectFirst(
    _ endpoints: [HTTPEndpoint], stagger: Duration, deadline: ContinuousClock.Instant
  ) -> ConnectionRace {
    let race = RaceState()
    for (index, endpoint) in endpoints.enumerated() {
      if index > 0 && race.waitForEnd(until: min(deadline, .now + stagger)) { break }
      guard ContinuousClock.now < deadline else { break }
      race.starting()
      do {
        try BackgroundThread(name: "ccsync-connect", stackSize: 256 * 1024) { [self] in
          do throws(TransportError) {
            let connection = HTTPConnection(endpoint: endpoint, stream: try connector.connect(to: endpoint, deadline: deadline))
            // In the pool before the race is called won, so the request finds it there.
            checkIn(connection)
            race.connected(index)
          } catch {
            race.failed(index, error.notDelivered(to: endpoint))
          }
        }.detach()
      } catch {
        race.failed(index, .notDelivered(endpoint: endpoint.description, reason: error.description, timedOut: false))
      }
    }
    _ = race.waitForEnd(until: deadline)
    return race.outcome(endpoints)
  }

  /// Whether the pool holds an idle connection to `endpoint` (it may since have been closed
  /// by the server; ``send(_:to:deadline:idempotent:)`` checks before using it).
  package func hasIdleConnection(to endpoint: HTTPEndpoint) -> Bool {
    idle.withLock { !$0.connections(to: endpoint).isEmpty }
  }
}

/// The shared state of one connection race: which endpoint connected first, and how each
/// failed. `@unchecked Sendable`: every field is guarded by `lock`.
private final class RaceState: @unchecked Sendable {
  private let lock = ConditionLock()
  private var winner: Int?
  private var started = 0
  private var failures: [Int: HTTPError] = [:]

  /// Counts an attempt as started, before its thread runs.
  func starting() {
    lock.withLock { started += 1 }
  }

  /// Records that attempt `index` connected; the first to do so wins.
  func connected(_ index: Int) {
    lock.withLock {
      if winner == nil { winner = index }
      lock.broadcast()
    }
  }

  /// Records why attempt `index` failed.
  func failed(_ index: Int, _ error: HTTPError) {
    lock.withLock {
      failures[index] = error
      lock.broadcast()
    }
  }

  /// Waits until an attempt connected, every one started has failed, or `limit`; returns
  /// whether one connected.
  func waitForEnd(until limit: ContinuousClock.Instant) -> Bool {
    lock.withLock {
      while winner == nil && failures.count < started && ContinuousClock.now < limit {
        lock.wait(until: limit)
      }
      return winner != nil
    }
  }

  /// The race's result, for `endpoints` in the order the attempts were numbered.
  func outcome(_ endpoints: [HTTPEndpoint]) -> HTTPClient.ConnectionRace {
    lock.withLock {
      if let winner { return .connected(endpoints[winner]) }
      return .failed(endpoints.indices.map { index in
        failures[index] ?? .notDelivered(endpoint: endpoints[index].description, reason: "connect: no answer before the deadline", timedOut: true)
      })
    }
  }
}
