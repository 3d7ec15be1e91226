import CCSyncEtcd
import CCSyncSystem

/// The process's etcd clients, one per cluster, user and TLS files: documents on the same
/// cluster share its kept-alive connections and TLS context. `Sendable`: the table is
/// behind a `Protected`.
final class EtcdClients: Sendable {
  /// The table the process shares.
  static let shared = EtcdClients()

  /// Keyed by the location without its key: what a client is made of.
  private let clients = Protected<[EtcdLocation: EtcdClient]>([:])

  /// The client for `location`'s endpoints, user and TLS files, made on first use.
  /// - Returns: ``StoreError/invalidLocation(_:reason:)`` when an endpoint does not parse.
  func client(for location: EtcdLocation) -> Result<EtcdClient, StoreError> {
    var identity = location
    identity.key = ""
    return clients.withLock { clients in
      if let client = clients[identity] { return .success(client) }
      do throws(EtcdError) {
        let client = try EtcdClient(location.clientConfiguration)
        clients[identity] = client
        return .success(client)
      } catch {
        return .failure(StoreError(error, name: location.description))
      }
    }
  }
}
