import CCSyncEtcd
import CCSyncSystem

/// etcd's lock NAME, held (see ``EtcdLocker``): its key, its fencing token, the lease that
/// keeps it and the watch on its key.
///
/// Mutual exclusion lasts while the lease does. When the lease is lost (revoked, expired
/// while the cluster could not be reached, or the lock key deleted), ``lease`` says so
/// (``LeaseKeeper/onLoss(_:)``, ``LeaseKeeper/losses``, ``lostReason``): from then on another
/// holder may have the lock, and whatever it guards must be left alone. Writes the lock
/// guards should carry ``fencingToken``, so that what they reach can refuse a holder older
/// than one it has seen (docs/SEMANTICS.md, "Locks").
///
/// Give it back with ``release()``; it is released too when the value is deinitialised.
///
/// `Sendable`: immutable but for the released flag, behind a `Protected`; the lease keeper and
/// the watch are `Sendable`.
public final class HeldEtcdLock: Sendable {
  /// The lock's URL, as given to the locker.
  public let location: EtcdLocation
  /// The key that stands for this holder, `NAME/LEASE-IN-HEX`: it exists exactly while the
  /// lock is held, so a transaction can make a write conditional on it.
  public let key: String
  /// The fencing token: the revision at which the lock was granted. Each holder's is greater
  /// than every earlier holder's (the next can only be granted after the previous key's
  /// deletion, a later revision), so a guarded store can refuse writes from a holder whose
  /// token is lower than one it has seen.
  public let fencingToken: Int64
  /// The lease that keeps the lock, renewed every third of its time to live; its loss notice
  /// is the lock's.
  public let lease: LeaseKeeper
  private let client: EtcdClient
  /// Follows the lock's key, whose deletion loses the lock.
  private let keyFollower: DocumentFollower
  private let logger: DiagnosticLog
  private let released = Protected(false)

  init(
    location: EtcdLocation, key: String, fencingToken: Int64, lease: LeaseKeeper, client: EtcdClient,
    keyFollower: DocumentFollower, logger: DiagnosticLog
  ) {
    self.location = location
    self.key = key
    self.fencingToken = fencingToken
    self.lease = lease
    self.client = client
    self.keyFollower = keyFollower
    self.logger = logger
  }

  /// Releases the lock if ``release()`` was not called (a lock is never left held, renewed
  /// for ever, because its value was dropped).
  deinit { release() }

  /// Why the lock is lost, once it is; `nil` while it is held.
  public var lostReason: String? { lease.lostReason }

  /// Releases the lock: stops watching its key and renewing its lease, and revokes the
  /// lease, which deletes the key and lets the next waiter in. A lease that cannot be
  /// revoked (the cluster unreachable) is logged as a warning, unless the lock was lost
  /// already: it expires within its time to live. Idempotent.
  public func release() {
    guard released.withLock({ released in
      defer { released = true }
      return !released
    }) else { return }
    keyFollower.stop()
    let wasLost = lease.lostReason != nil
    lease.stop()
    do {
      try client.revokeLease(lease.leaseID, deadline: .seconds(wasLost ? 2 : 5))
    } catch {
      // A lock already lost was reported as such; its lease is gone or going.
      if case .leaseNotFound = error { return }
      if wasLost { return }
      logger.log(
        .warning,
        "cannot release the lock '\(location.description)' (\(error)); it is released when its lease \(lease.leaseName) expires, within \(lease.ttl) s")
    }
  }
}
