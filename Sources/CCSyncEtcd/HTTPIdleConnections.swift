/// The idle connections of an ``HTTPClient``, by endpoint, the most recently used last.
///
/// A list of endpoints searched in order rather than a dictionary: a client talks to a
/// handful of endpoints, and comparing an endpoint with the one in front (its strings share
/// storage, so it is a pointer comparison) costs less than hashing its text, which was done
/// twice per call. Not `Sendable`: the client keeps it behind a lock.
struct HTTPIdleConnections {
  private var entries: [(endpoint: HTTPEndpoint, connections: [HTTPConnection])] = []

  /// Takes the most recently used idle connection to `endpoint` out of the pool.
  mutating func popLast(for endpoint: HTTPEndpoint) -> HTTPConnection? {
    guard let index = index(of: endpoint) else { return nil }
    return entries[index].connections.popLast()
  }

  /// Adds `connection` as the most recently used one to its endpoint, unless `limit`
  /// connections to it are idle already; `false` then.
  mutating func append(_ connection: HTTPConnection, limit: Int) -> Bool {
    guard let index = index(of: connection.endpoint) else {
      guard limit > 0 else { return false }
      entries.append((connection.endpoint, [connection]))
      return true
    }
    guard entries[index].connections.count < limit else { return false }
    entries[index].connections.append(connection)
    return true
  }

  /// Takes every idle connection to `endpoint`, or to every endpoint when `nil`, out of the
  /// pool.
  mutating func removeAll(for endpoint: HTTPEndpoint?) -> [HTTPConnection] {
    guard let endpoint else {
      defer { entries = [] }
      return entries.flatMap(\.connections)
    }
    guard let index = index(of: endpoint) else { return [] }
    return entries.remove(at: index).connections
  }

  /// The idle connections to `endpoint`, the most recently used last.
  func connections(to endpoint: HTTPEndpoint) -> [HTTPConnection] {
    index(of: endpoint).map { entries[$0].connections } ?? []
  }

  private func index(of endpoint: HTTPEndpoint) -> Int? {
    entries.firstIndex { $0.endpoint == endpoint }
  }
}
