import CCSyncEtcd
import CCSyncSystem

/// The process's etcd clients, one per cluster, user and TLS files: documents on the same
/// cluster share its kept-alive connections and TLS context. `Sendable`: the table is
/// behind a `Protected`.
final class EtcdClients: Sendable {
  /// The table the process shares.
  static let shared = EtcdClients()

  private struct Identity: Hashable {
    var endpoints: [String]
    var user: String?
    var password: String?
    var tls: TLSSettings
  }

  private let clients = Protected<[Identity: EtcdClient]>([:])

  /// The client for `location`'s endpoints, user and TLS files, made on first use.
  /// - Returns: ``StoreError/invalidLocation(_:reason:)`` when an endpoint does not parse.
  func client(for location: EtcdLocation) -> Result<EtcdClient, StoreError> {
    let identity = Identity(
      endpoints: location.endpoints, user: location.user, password: location.password, tls: location.tlsSettings)
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
