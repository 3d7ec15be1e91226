import CCSyncJSON
import CCSyncSystem

/// A lease the cluster granted. `Sendable`.
package struct EtcdLease: Sendable, Hashable {
  /// The lease's id, for puts (`lease:`), locks, keep-alives and revoking.
  package var id: Int64
  /// Its time to live in seconds, as granted.
  package var ttl: Int64

  /// A lease with the given id and time to live.
  package init(id: Int64, ttl: Int64) {
    self.id = id
    self.ttl = ttl
  }
}

/// What the cluster knows of a lease. `Sendable`.
package struct EtcdLeaseStatus: Sendable, Hashable {
  /// The lease's id.
  package var id: Int64
  /// Seconds left before it expires.
  package var remainingTTL: Int64
  /// The time to live it was granted.
  package var grantedTTL: Int64
  /// The keys attached to it, when asked for.
  package var keys: [[UInt8]]
}

extension EtcdClient {
  /// Grants a lease of `ttl` seconds (`/v3/lease/grant`). A write: not repeated once sent
  /// (a lease granted twice would only expire unused, but the caller could not know its id).
  /// - Parameters:
  ///   - ttl: seconds; the server raises it to its minimum (about 1.5 election timeouts).
  ///   - id: the id to use, or 0 for one the server picks.
  /// - Throws: ``EtcdError/outcomeUnknown(endpoint:operation:reason:)``, the failover errors.
  package func grantLease(ttl: Int64, id: Int64 = 0, deadline: Duration? = nil) throws(EtcdError) -> EtcdLease {
    var body: JSONObject = JSONObject([("TTL", EtcdJSON.int64(ttl))])
    if id != 0 { body["ID"] = EtcdJSON.int64(id) }
    let call = Call(operation: "lease grant", path: "/v3/lease/grant", body: .object(body), isWrite: true, deadline: deadline)
    return try perform(call).decode { object throws(MalformedReply) in
      EtcdLease(id: try object.int64("ID"), ttl: try object.int64("TTL"))
    }
  }

  /// Renews a lease once (`/v3/lease/keepalive`, one message on the stream). Repeating a
  /// renewal does no harm: a read as far as failover goes. Call it well within the TTL (a
  /// third of it is usual).
  /// - Returns: the time to live it was renewed to, in seconds.
  /// - Throws: ``EtcdError/leaseNotFound(endpoint:lease:)`` when the lease expired or was
  ///   revoked (the gateway answers that with a reply that has no TTL), the failover errors.
  @discardableResult
  package func keepAlive(lease: Int64, deadline: Duration? = nil) throws(EtcdError) -> Int64 {
    let call = Call(
      operation: "lease keep-alive", path: "/v3/lease/keepalive", body: ["ID": EtcdJSON.int64(lease)],
      isWrite: false, deadline: deadline, lease: lease)
    let answer = try perform(call)
    let ttl = try answer.decode { object throws(MalformedReply) in try object.int64("TTL") }
    guard ttl > 0 else { throw .leaseNotFound(endpoint: answer.endpoint, lease: lease) }
    return ttl
  }

  /// Revokes a lease (`/v3/lease/revoke`): it ends now, and every key attached to it is
  /// deleted (a lock held with it is released). A write.
  /// - Throws: ``EtcdError/leaseNotFound(endpoint:lease:)``,
  ///   ``EtcdError/outcomeUnknown(endpoint:operation:reason:)``, the failover errors.
  package func revokeLease(_ lease: Int64, deadline: Duration? = nil) throws(EtcdError) {
    let call = Call(
      operation: "lease revoke", path: "/v3/lease/revoke", body: ["ID": EtcdJSON.int64(lease)],
      isWrite: true, deadline: deadline, lease: lease)
    _ = try perform(call)
  }

  /// What the cluster knows of a lease (`/v3/lease/timetolive`). A read.
  /// - Parameter keys: also list the keys attached to it.
  /// - Throws: ``EtcdError/leaseNotFound(endpoint:lease:)`` when it expired, was revoked or
  ///   never existed (the gateway answers `TTL: -1`), the failover errors.
  package func leaseStatus(_ lease: Int64, keys: Bool = false, deadline: Duration? = nil) throws(EtcdError) -> EtcdLeaseStatus {
    let call = Call(
      operation: "lease time-to-live", path: "/v3/lease/timetolive",
      body: ["ID": EtcdJSON.int64(lease), "keys": .bool(keys)], isWrite: false, deadline: deadline, lease: lease)
    let answer = try perform(call)
    let status = try answer.decode { object throws(MalformedReply) in
      EtcdLeaseStatus(
        id: try object.int64("ID"), remainingTTL: try object.int64("TTL"), grantedTTL: try object.int64("grantedTTL"),
        keys: try EtcdClient.base64Strings(object["keys"]))
    }
    guard status.remainingTTL >= 0 else { throw .leaseNotFound(endpoint: answer.endpoint, lease: lease) }
    return status
  }

  /// An array of base64 strings, decoded; empty when absent.
  private static func base64Strings(_ value: JSONValue?) throws(MalformedReply) -> [[UInt8]] {
    guard let value else { return [] }
    guard case .array(let elements) = value else { throw MalformedReply(detail: "\"keys\" is not an array") }
    var keys: [[UInt8]] = []
    for element in elements {
      keys.append(try JSONObject([("key", element)]).bytes("key"))
    }
    return keys
  }
}
