import CCSyncEtcd
import CCSyncSystem

/// Takes etcd's lock NAME, the v3lock service's (`etcdctl lock NAME` takes the same one):
/// the lock held is a ``HeldEtcdLock``, tied to a lease the library keeps alive
/// (``LeaseKeeper``), with a loss notice and a fencing token (docs/SEMANTICS.md, "Locks").
///
/// - The lease (``ttl`` seconds) is renewed every third of its time to live while the lock
///   is awaited and while it is held.
/// - The lock key (`NAME/LEASE-IN-HEX`) is watched: when it goes (the lease revoked or
///   expired, the key deleted), or the lease cannot be renewed before it would expire, the
///   lock is lost and the lease's loss notice says so.
/// - A wait of `.nonBlocking` does what the lock service does without waiting: puts its key
///   and looks whether it is the oldest under `NAME/`; if not, it revokes its lease (the key
///   goes with it). A wait that runs out, or is cancelled, leaves nothing behind.
///
/// `Sendable`: immutable but for the leases of the attempts under way, behind a `Protected`.
public final class EtcdLocker: Sendable {
  /// The lease's time to live when none is given: how long a holder that vanished (killed,
  /// cut off) keeps others out, and how long a partition is survived.
  public static let defaultTTL: Int64 = 10

  /// How long one wait on the lock service lasts before it is started again with a new
  /// lease (the server withdraws the old waiter): a connection lost without a word (a
  /// member's host gone) cannot keep a waiter longer.
  static let longestWaitOnServer: Duration = .seconds(60)
  /// How long one wait on the lock service lasts for an `async` waiter: how late its
  /// cancellation may be seen, and how long it holds one of the library's threads at a time.
  static let asyncWaitSlice: Duration = .seconds(1)

  /// The lock's URL: the cluster, and the lock's name as its key.
  public let location: EtcdLocation
  /// The time to live of the lock's lease, in seconds.
  public let ttl: Int64
  let client: EtcdClient
  private let name: [UInt8]
  private let logger: DiagnosticLog
  /// The leases of the attempts under way, revoked by ``abandon()``.
  private let attempts = Protected<[LeaseKeeper]>([])

  /// A locker for etcd's lock named by `location`'s key, on `location`'s cluster.
  /// - Parameters:
  ///   - ttl: the lease's time to live in seconds (the cluster raises it to its minimum).
  ///   - logger: where a lease that cannot be renewed, or a lock that cannot be released,
  ///     is reported (warnings).
  /// - Throws: ``StoreError/invalidLocation(_:reason:)`` for a configuration the client
  ///   refuses (TLS files that cannot be read).
  public init(location: EtcdLocation, ttl: Int64 = EtcdLocker.defaultTTL, logger: DiagnosticLog = .standardError) throws(StoreError) {
    self.location = location
    self.ttl = ttl
    self.logger = logger
    name = Array(location.key.utf8)
    do {
      client = try EtcdClient(location.clientConfiguration)
    } catch {
      throw StoreError(error, name: location.description)
    }
  }

  /// Takes the lock as `wait` says, blocking the calling thread: at once or not at all
  /// (`.nonBlocking`), within a time, or however long it takes.
  /// - Returns: the lock, held until ``HeldEtcdLock/release()`` or the loss of its lease.
  /// - Throws: ``StoreError/lockUnavailable(path:)`` when another holder has it and the wait
  ///   is over: its path is the holder's lock key (`NAME/LEASE-IN-HEX`) when known, the
  ///   lock's name otherwise; ``StoreError`` when the cluster cannot be reached or refuses.
  public func acquire(wait: ContentionWait = .forever) throws(StoreError) -> HeldEtcdLock {
    do {
      return try acquire(wait: wait, slice: EtcdLocker.longestWaitOnServer, cancellation: nil)
    } catch let error as StoreError {
      throw error
    } catch {
      throw .cluster("'\(location.description)': \(error)")
    }
  }

  /// ``acquire(wait:)`` without blocking the calling task's thread: the wait happens on the
  /// library's own threads (at most 4), in waits on the lock service of at most a second,
  /// each a separate piece of work. A task cancelled while it waits stops within that second
  /// and throws `CancellationError`, its lease revoked: it does not hold the lock then, nor
  /// later.
  /// - Throws: as ``acquire(wait:)``; `CancellationError`.
  public func acquireAsync(wait: ContentionWait = .forever) async throws -> HeldEtcdLock {
    let deadline = wait.deadline
    while true {
      try Task.checkCancellation()
      let held = try await BlockingWorkPool.shared.run { cancellation throws -> HeldEtcdLock? in
        let now = ContinuousClock.now
        let sliceWait: ContentionWait = wait == .nonBlocking ? .nonBlocking : .until(min(deadline ?? .now + EtcdLocker.asyncWaitSlice, now + EtcdLocker.asyncWaitSlice))
        do {
          let lock = try self.acquire(wait: sliceWait, slice: EtcdLocker.asyncWaitSlice, cancellation: cancellation)
          if cancellation.isCancelled {
            lock.release()
            throw CancellationError()
          }
          return lock
        } catch StoreError.lockUnavailable(let holder) {
          if deadline.map({ ContinuousClock.now >= $0 }) ?? false { throw StoreError.lockUnavailable(path: holder) }
          return nil
        }
      }
      guard let held else { continue }
      if Task.isCancelled {
        held.release()
        throw CancellationError()
      }
      return held
    }
  }

  /// The wait on the lock service, in waits of at most `slice`, looking at `cancellation`
  /// before each.
  private func acquire(wait: ContentionWait, slice: Duration, cancellation: CancellationFlag?) throws -> HeldEtcdLock {
    try cancellation?.check()
    let deadline: ContinuousClock.Instant?
    switch wait {
    case .nonBlocking: return try tryOnce()
    case .forever: deadline = nil
    case .timeout(let duration): deadline = ContinuousClock.now + duration
    }
    while true {
      try cancellation?.check()
      let keeper = try startLease()
      let now = ContinuousClock.now
      let left = deadline.map { max($0 - now, .milliseconds(1)) } ?? slice
      let waitFor = min(left, slice)
      let lock: EtcdLock
      do throws(EtcdError) {
        lock = try client.lock(name, lease: keeper.leaseID, deadline: waitFor)
      } catch {
        end(keeper)
        let waitIsOver = deadline.map { ContinuousClock.now >= $0 } ?? false
        switch error {
        case .outcomeUnknown where waitIsOver, .timeout where waitIsOver:
          // The wait ran out. A wait that ends without an answer is "outcome unknown" (the
          // lock may have been granted as it ended): revoking the lease released it if so.
          throw StoreError.lockUnavailable(path: (try? oldestHolder()) ?? location.key)
        case .outcomeUnknown:
          // The member went away mid-wait, or the longest wait on the server passed: wait
          // again, with a new lease.
          if ContinuousClock.now < now + waitFor { ContinuousClock.sleepThread(for: .milliseconds(100)) }
          continue
        default:
          throw StoreError(error, name: location.description)
        }
      }
      do {
        if let held = try confirm(lock, keeper: keeper) { return held }
      } catch {
        end(keeper)
        throw error
      }
      // Granted, but lost already (the lease ended while waiting): try again while allowed.
      end(keeper)
      if let deadline, ContinuousClock.now >= deadline {
        throw StoreError.lockUnavailable(path: (try? oldestHolder()) ?? location.key)
      }
    }
  }

  /// What the lock service does, without waiting. Puts this holder's key (with the lease)
  /// and looks whether it is the oldest under `NAME/`; if not, revokes the lease.
  private func tryOnce() throws -> HeldEtcdLock {
    let keeper = try startLease()
    do {
      let key = name + Array("/\(String(UInt64(bitPattern: keeper.leaseID), radix: 16))".utf8)
      let put = try etcd { () throws(EtcdError) in try client.put(key, value: [], lease: keeper.leaseID) }
      let holders = try etcd { () throws(EtcdError) in try client.range(.prefix(name + Array("/".utf8))) }
      let oldest = holders.keyValues.min { $0.createRevision < $1.createRevision }
      if oldest?.key == key, let held = try confirm(EtcdLock(key: key, revision: put.revision), keeper: keeper) {
        return held
      }
      end(keeper)
      throw StoreError.lockUnavailable(path: oldest.map { String(decoding: $0.key, as: UTF8.self) } ?? location.key)
    } catch {
      end(keeper)
      throw error
    }
  }

  /// The key of the oldest holder or waiter under `NAME/`: the holder.
  private func oldestHolder() throws -> String? {
    let holders = try etcd { () throws(EtcdError) in try client.range(.prefix(name + Array("/".utf8))) }
    return holders.keyValues.min { $0.createRevision < $1.createRevision }.map { String(decoding: $0.key, as: UTF8.self) }
  }

  /// Checks that the lock granted is still held (its key is there, its lease renewed) and
  /// starts watching its key. `nil` when it was lost already (the lease ended while waiting).
  private func confirm(_ lock: EtcdLock, keeper: LeaseKeeper) throws -> HeldEtcdLock? {
    guard keeper.lostReason == nil else { return nil }
    var lockKey = location  // the same members, user and TLS files
    lockKey.key = String(decoding: lock.key, as: UTF8.self)
    let keyLocation = lockKey
    let keyDocument = SharedDocument(etcd: keyLocation, logger: .silent)
    // Read first: the watch then starts after this revision, so the key's deletion, however
    // soon, is seen.
    guard try keyDocument.exists() else { return nil }
    let follower = keyDocument.follow(followsSchema: false) { event in
      guard case .missing = event else { return }
      keeper.markLost("its lock key '\(keyLocation.key)' was deleted: the lease revoked or expired, or the key removed")
    }
    attempts.withLock { $0.removeAll { $0 === keeper } }
    return HeldEtcdLock(
      location: location, key: keyLocation.key, fencingToken: lock.revision, lease: keeper, client: client, keyFollower: follower,
      logger: logger)
  }

  /// Grants a lease and starts renewing it.
  private func startLease() throws(StoreError) -> LeaseKeeper {
    let keeper = try LeaseKeeper.grant(client: client, ttl: ttl, name: location.description, logger: logger)
    attempts.withLock { $0.append(keeper) }
    return keeper
  }

  /// Stops renewing `keeper`'s lease and revokes it (its keys go with it), quietly: a lease
  /// that cannot be revoked expires within its time to live.
  private func end(_ keeper: LeaseKeeper) {
    keeper.stop()
    _ = try? client.revokeLease(keeper.leaseID, deadline: .seconds(2))
    attempts.withLock { $0.removeAll { $0 === keeper } }
  }

  /// Gives up the attempts under way (a signal while waiting): revokes their leases, so that
  /// no lock is granted to them. A lock already held is left alone.
  public func abandon() {
    for keeper in attempts.withLock({ $0 }) { end(keeper) }
  }

  /// Runs a client call, its failure as a ``StoreError`` naming the lock's URL.
  private func etcd<Result>(_ body: () throws(EtcdError) -> Result) throws(StoreError) -> Result {
    do {
      return try body()
    } catch {
      throw StoreError(error, name: location.description)
    }
  }
}
