import CCSyncJSON
import CCSyncSystem

/// A lock held through etcd's v3lock service. `Sendable`.
package struct EtcdLock: Sendable, Hashable {
  /// The key that stands for the holder: `NAME/LEASE-IN-HEX`. It exists exactly as long as
  /// the lock is held (until ``EtcdClient/unlock(_:deadline:)`` or the lease ends), so a
  /// transaction can make a write conditional on still holding the lock with
  /// `EtcdCompare(key: lock.key, .createRevision(0), .greater)`.
  package var key: [UInt8]
  /// The store revision at which the lock was acquired. Each holder's is greater than every
  /// earlier holder's (the next one can only get it after the previous key's deletion, a
  /// later revision): a fencing token to hand to whatever the lock protects.
  package var revision: Int64

  /// A lock held under `key`, granted at `revision`.
  package init(key: [UInt8], revision: Int64) {
    self.key = key
    self.revision = revision
  }
}

extension EtcdClient {
  /// Takes the lock `name` (`/v3/lock/lock`), waiting while another holder has it.
  ///
  /// The lock is tied to `lease`: it is released when the lease ends (revoked, or expired
  /// because its owner died), so keep the lease alive while holding the lock. A write, and
  /// one that waits on the server by design: the attempt is bounded by the call's deadline
  /// only, not by ``Configuration/attemptTimeout``. When the deadline passes while waiting,
  /// the call fails with ``EtcdError/outcomeUnknown(endpoint:operation:reason:)`` (the lock
  /// may have been granted as the connection closed; the server withdraws a waiter whose
  /// connection closed): revoke the lease, or unlock `name/<lease in hex>`, to be sure.
  /// - Parameters:
  ///   - name: the lock's name; holders of the same name exclude each other.
  ///   - lease: a lease this holder keeps alive; not 0 (the server would make a 60-second
  ///     lease of its own that nobody renews or revokes).
  ///   - deadline: how long to wait in all; the configuration's deadline when `nil`.
  /// - Throws: ``EtcdError/leaseNotFound(endpoint:lease:)``,
  ///   ``EtcdError/outcomeUnknown(endpoint:operation:reason:)``, the failover errors;
  ///   ``EtcdError/invalidConfiguration(_:)`` for lease 0.
  package func lock(_ name: [UInt8], lease: Int64, deadline: Duration? = nil) throws(EtcdError) -> EtcdLock {
    guard lease != 0 else { throw .invalidConfiguration("a lock needs a lease the holder keeps alive, not 0") }
    let call = Call(
      operation: "lock", path: "/v3/lock/lock", body: ["name": EtcdJSON.base64(name), "lease": EtcdJSON.int64(lease)],
      isWrite: true, deadline: deadline, waitsOnServer: true, lease: lease)
    return try perform(call).decode { object throws(MalformedReply) in
      let key = try object.bytes("key")
      guard !key.isEmpty else { throw MalformedReply(detail: "a lock reply without \"key\"") }
      return EtcdLock(key: key, revision: try object.headerRevision())
    }
  }

  /// Releases a lock (`/v3/lock/unlock`): deletes its key, letting the next waiter in. A
  /// write. Unlocking a lock no longer held (its lease ended) succeeds and does nothing.
  /// - Throws: ``EtcdError/outcomeUnknown(endpoint:operation:reason:)``, the failover errors.
  package func unlock(_ lock: EtcdLock, deadline: Duration? = nil) throws(EtcdError) {
    let call = Call(
      operation: "unlock", path: "/v3/lock/unlock", body: ["key": EtcdJSON.base64(lock.key)], isWrite: true,
      deadline: deadline)
    _ = try perform(call)
  }
}
