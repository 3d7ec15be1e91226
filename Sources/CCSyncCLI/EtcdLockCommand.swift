import CCSync
import CCSyncEtcd
import CCSyncProcesses

/// `ccsync lock [-n] [-w SECS] [-E CODE] [--ttl SECS] etcd://[HOSTS]/NAME -- CMD ARGS...`: run
/// a command while holding etcd's lock NAME, the v3lock service's (`etcdctl lock NAME` takes
/// the same one).
///
/// - The lock is tied to a lease (``defaultTTL`` seconds unless `--ttl`), renewed every third
///   of its time to live by a thread of its own (``LeaseKeeper``) while the lock is awaited
///   and while CMD runs.
/// - The lock key (`NAME/LEASE-IN-HEX`) is watched: when it goes (the lease revoked or
///   expired, the key deleted), or the lease cannot be renewed before it would expire,
///   mutual exclusion is gone: CMD gets SIGTERM, SIGKILL 5 s later, and the command exits 75
///   naming the lease.
/// - CMD gets the lock key's revision in `CCSYNC_LOCK_REVISION`, a fencing token that grows
///   with every grant.
/// - `-n` does what the lock service does without waiting: puts its key and looks whether
///   it is the oldest under `NAME/`; if not, it revokes its lease (the key goes with it).
///   `-w SECS` waits on the lock service for SECS. Either way a lock not taken exits 1 (or
///   CODE), leaving nothing behind.
/// - The lock is released by revoking the lease, which deletes the key.
enum EtcdLockCommand {
  /// The lease's time to live when `--ttl` does not say: how long a holder that vanished
  /// (killed, cut off) keeps others out, and how long a partition is survived.
  static let defaultTTL: Int64 = 10
  /// How long CMD has between SIGTERM and SIGKILL once the lock is lost.
  static let killDelay: Duration = .seconds(5)

  static func run(
    location: EtcdLocation, command: [String], wait: LockWait, ttl: Int64, conflictCode: Int32
  ) throws -> Int32 {
    // Caught while the lock is awaited, so that the lease is revoked before ccsync ends by
    // them; SIGINT and SIGQUIT are left to CMD once it runs, as for a file's lock.
    let signals = try SignalPipe.install([.interrupt, .terminate, .hangUp, .quit, .childStatusChanged])
    let wake = try WakeUpChannel()
    let locker = try EtcdLocker(location: location, ttl: ttl, wake: wake)
    switch try acquire(locker, wait: wait, signals: signals, wake: wake) {
    case .notTaken(let holder):
      let held = holder.map { " (lock key '\($0)')" } ?? ""
      throw CommandFailure(conflictCode, "'\(location.description)' is locked by another holder\(held)")
    case .held(let grant):
      try Signal.interrupt.ignore()
      try Signal.quit.ignore()
      return try runWhileHolding(command, grant: grant, locker: locker, signals: signals, wake: wake)
    }
  }

  /// Takes the lock on a thread of its own, while this one waits for it or for a signal: a
  /// signal revokes the lease of the attempt under way and ends the process by it.
  private static func acquire(
    _ locker: EtcdLocker, wait: LockWait, signals: SignalPipe, wake: WakeUpChannel
  ) throws -> EtcdLocker.Acquisition {
    let outcome = Protected<Result<EtcdLocker.Acquisition, any Error>?>(nil)
    let waiter = try BackgroundThread(name: "ccsync-lock") {
      let result = Result { () throws -> EtcdLocker.Acquisition in try locker.acquire(wait: wait) }
      outcome.withLock { $0 = result }
      wake.wakeUp()
    }
    waiter.detach()
    while true {
      if let result = outcome.withLock({ $0 }) { return try result.get() }
      _ = waitForInput([signals, wake], timeout: .seconds(1))
      wake.drain()
      for signal in signals.drain() where signal != .childStatusChanged {
        locker.abandon()
        signal.endProcess()
      }
    }
  }

  /// Starts `command` with `CCSYNC_LOCK_REVISION`, passes SIGTERM and SIGHUP on to it, stops
  /// it when the lock is lost, releases the lock, and returns its status (75 when the lock
  /// was lost).
  private static func runWhileHolding(
    _ command: [String], grant: EtcdLocker.Grant, locker: EtcdLocker, signals: SignalPipe, wake: WakeUpChannel
  ) throws -> Int32 {
    let child: Subprocess
    do {
      child = try Subprocess.start(command, environment: ["CCSYNC_LOCK_REVISION": String(grant.lock.revision)])
    } catch {
      locker.release(grant)
      throw CommandFailure(error.exitCode, error.description)
    }
    var lost: String?
    var killAt: ContinuousClock.Instant?
    while true {
      if let status = child.statusIfExited() {
        // A loss noticed only now may still have left CMD running without the lock.
        if lost == nil, let reason = grant.keeper.lostReason {
          lost = reason
          report(lost: reason, grant: grant, locker: locker, command: nil)
        }
        locker.release(grant)
        return lost == nil ? status : ExitCode.lockLost
      }
      let timeout = killAt.map { max($0 - ContinuousClock.now, .zero) } ?? .seconds(1)
      _ = waitForInput([signals, wake], timeout: timeout)
      wake.drain()
      for signal in signals.drain() where signal != .childStatusChanged {
        try? child.send(signal)
      }
      if lost == nil, let reason = grant.keeper.lostReason {
        lost = reason
        report(lost: reason, grant: grant, locker: locker, command: command[0])
        try? child.send(.terminate)
        killAt = ContinuousClock.now + killDelay
      }
      if let deadline = killAt, ContinuousClock.now >= deadline {
        try? child.send(.kill)
        killAt = nil
      }
    }
  }

  private static func report(lost reason: String, grant: EtcdLocker.Grant, locker: EtcdLocker, command: String?) {
    let stopping = command.map { ": stopping '\($0)' (SIGTERM, then SIGKILL after \(killDelay.components.seconds) s)" } ?? ""
    StandardStreams.writeLine(
      "ccsync: lost the lock '\(locker.location.description)' (lease \(grant.keeper.leaseName): \(reason)); mutual exclusion is gone\(stopping)",
      toStandardError: true)
  }
}

/// Takes and releases etcd's lock NAME for ``EtcdLockCommand``. `Sendable`: immutable but
/// for the lease in use, behind a `Protected`.
final class EtcdLocker: Sendable {
  /// A lock held: its key (`NAME/LEASE-IN-HEX`) and the revision it was granted at.
  struct Lock: Sendable {
    var key: [UInt8]
    var revision: Int64
  }

  /// A lock held, the lease keeping it, and the watch on its key.
  struct Grant: Sendable {
    var lock: Lock
    var keeper: LeaseKeeper
    /// Watches the lock key, telling ``keeper`` when it goes; cancelled on release.
    var keyWatch: any StoreWatch
  }

  /// What an attempt to take the lock came to.
  enum Acquisition: Sendable {
    case held(Grant)
    /// Another holder has it (its key, when known) and the wait asked for is over.
    case notTaken(holder: String?)
  }

  /// How long one wait on the lock service lasts before it is started again with a new
  /// lease (the server withdraws the old waiter): a connection lost without a word (a
  /// member's host gone) cannot keep this process waiting longer.
  static let longestWaitOnServer: Duration = .seconds(60)

  let location: EtcdLocation
  let client: EtcdClient
  let ttl: Int64
  private let name: [UInt8]
  private let wake: WakeUpChannel
  /// The lease of the attempt under way, revoked by ``abandon()``.
  private let current = Protected<LeaseKeeper?>(nil)

  init(location: EtcdLocation, ttl: Int64, wake: WakeUpChannel) throws(StoreError) {
    self.location = location
    self.ttl = ttl
    self.wake = wake
    name = Array(location.key.utf8)
    do {
      client = try EtcdClient(location.clientConfiguration)
    } catch {
      throw StoreError(error, name: location.description)
    }
  }

  /// Takes the lock as `wait` says: at once or not at all (`nonBlocking`), within a time,
  /// or however long it takes.
  /// - Throws: ``StoreError`` when the cluster cannot be reached or refuses.
  func acquire(wait: LockWait) throws -> Acquisition {
    let deadline: ContinuousClock.Instant?
    switch wait {
    case .nonBlocking: return try tryOnce()
    case .forever: deadline = nil
    case .timeout(let duration): deadline = ContinuousClock.now + duration
    }
    while true {
      let keeper = try startLease()
      let now = ContinuousClock.now
      let left = deadline.map { max($0 - now, .milliseconds(1)) } ?? EtcdLocker.longestWaitOnServer
      let waitFor = min(left, EtcdLocker.longestWaitOnServer)
      let lock: Lock
      do throws(EtcdError) {
        let granted = try client.lock(name, lease: keeper.lease.id, deadline: waitFor)
        lock = Lock(key: granted.key, revision: granted.revision)
      } catch {
        end(keeper)
        let waitIsOver = deadline.map { ContinuousClock.now >= $0 } ?? false
        switch error {
        case .outcomeUnknown where waitIsOver, .timeout where waitIsOver:
          // The wait ran out. A wait that ends without an answer is "outcome unknown" (the
          // lock may have been granted as it ended): revoking the lease released it if so.
          return .notTaken(holder: (try? oldestHolder()) ?? nil)
        case .outcomeUnknown:
          // The member went away mid-wait, or the longest wait on the server passed: wait
          // again, with a new lease.
          ContinuousClock.sleepThread(for: .milliseconds(100))
          continue
        default:
          throw StoreError(error, name: location.description)
        }
      }
      do {
        if let grant = try confirm(lock, keeper: keeper) { return .held(grant) }
      } catch {
        end(keeper)
        throw error
      }
      // Granted, but lost already (the lease ended while waiting): try again while allowed.
      end(keeper)
      if let deadline, ContinuousClock.now >= deadline { return .notTaken(holder: (try? oldestHolder()) ?? nil) }
    }
  }

  /// `-n`: what the lock service does, without waiting. Puts this holder's key (with the
  /// lease) and looks whether it is the oldest under `NAME/`; if not, revokes the lease.
  private func tryOnce() throws -> Acquisition {
    let keeper = try startLease()
    do {
      let key = name + Array("/\(String(UInt64(bitPattern: keeper.lease.id), radix: 16))".utf8)
      let put = try etcd { () throws(EtcdError) in try client.put(key, value: [], lease: keeper.lease.id) }
      let holders = try etcd { () throws(EtcdError) in try client.range(.prefix(name + Array("/".utf8))) }
      let oldest = holders.keyValues.min { $0.createRevision < $1.createRevision }
      if oldest?.key == key, let grant = try confirm(Lock(key: key, revision: put.revision), keeper: keeper) {
        return .held(grant)
      }
      end(keeper)
      return .notTaken(holder: oldest.map { String(decoding: $0.key, as: UTF8.self) })
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
  private func confirm(_ lock: Lock, keeper: LeaseKeeper) throws -> Grant? {
    guard keeper.lostReason == nil else { return nil }
    var lockKey = location  // the same members, user and TLS files
    lockKey.key = String(decoding: lock.key, as: UTF8.self)
    let keyLocation = lockKey
    let store = SharedDocument(etcd: keyLocation, logger: .silent).store
    // Read first: the watch then starts after this revision, so the key's deletion, however
    // soon, is seen.
    guard try store.read() != nil else { return nil }
    let wake = self.wake
    let watch = store.watch { hint in
      guard case .missing? = hint.current else { return }
      keeper.markLost("its lock key '\(keyLocation.key)' was deleted: the lease revoked or expired, or the key removed")
      wake.wakeUp()
    }
    return Grant(lock: lock, keeper: keeper, keyWatch: watch)
  }

  /// Grants a lease and starts renewing it.
  private func startLease() throws -> LeaseKeeper {
    let grantedAt = ContinuousClock.now
    let lease = try etcd { () throws(EtcdError) in try client.grantLease(ttl: ttl) }
    let keeper = try LeaseKeeper(client: client, lease: lease, grantedAt: grantedAt, wake: wake)
    current.withLock { $0 = keeper }
    return keeper
  }

  /// Stops renewing `keeper`'s lease and revokes it (its keys go with it), quietly: a lease
  /// that cannot be revoked expires within its time to live.
  private func end(_ keeper: LeaseKeeper) {
    keeper.stop()
    _ = try? client.revokeLease(keeper.lease.id, deadline: .seconds(2))
    current.withLock { if $0 === keeper { $0 = nil } }
  }

  /// Gives up the attempt under way (a signal while waiting): revokes its lease.
  func abandon() {
    if let keeper = current.withLock({ $0 }) { end(keeper) }
  }

  /// Releases a lock held: stops watching and renewing, and revokes the lease, which deletes
  /// the lock key. A lease that cannot be revoked (the cluster unreachable) is reported; it
  /// expires within its time to live.
  func release(_ grant: Grant) {
    grant.keyWatch.cancel()
    let wasLost = grant.keeper.lostReason != nil
    grant.keeper.stop()
    do {
      try client.revokeLease(grant.keeper.lease.id, deadline: .seconds(wasLost ? 2 : 5))
    } catch {
      // A lock already lost was reported as such; its lease is gone or going.
      if case .leaseNotFound = error { return }
      if wasLost { return }
      StandardStreams.writeLine(
        "ccsync: cannot release the lock '\(location.description)' (\(error)); it is released when its lease \(grant.keeper.leaseName) expires, within \(grant.keeper.lease.ttl) s",
        toStandardError: true)
    }
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

/// Renews one lease on a thread of its own, every third of its time to live, and says when
/// it is lost: the cluster answers that it is gone (revoked, expired), or it could not be
/// renewed before it would have expired (a partition). `Sendable`: its state is behind a
/// `Protected`.
final class LeaseKeeper: Sendable {
  private struct State {
    var stopped = false
    var lost: String?
  }

  let lease: EtcdLease
  private let state = Protected(State())
  /// Wakes the renewing thread's pause when stopped.
  private let pause = ConditionLock()
  private let wake: WakeUpChannel

  /// Starts renewing `lease`, granted at `grantedAt` (taken before the grant was sent, so
  /// that expiry is never later than the cluster's).
  init(client: EtcdClient, lease: EtcdLease, grantedAt: ContinuousClock.Instant, wake: WakeUpChannel) throws(SystemError) {
    self.lease = lease
    self.wake = wake
    let thread = try BackgroundThread(name: "ccsync-lease") { [self] in renew(client: client, grantedAt: grantedAt) }
    thread.detach()
  }

  /// The lease's id as etcdctl prints it (`lease list`, `lease revoke`): 16 hex digits.
  var leaseName: String {
    let hex = String(UInt64(bitPattern: lease.id), radix: 16)
    return String(repeating: "0", count: max(16 - hex.count, 0)) + hex
  }

  /// Why the lease (and the lock with it) is lost, once it is.
  var lostReason: String? { state.withLock(\.lost) }

  /// Records that the lease or its lock is lost (the first reason stays).
  func markLost(_ reason: String) {
    state.withLock { state in
      if state.lost == nil && !state.stopped { state.lost = reason }
    }
  }

  /// Stops renewing.
  func stop() {
    state.withLock { $0.stopped = true }
    pause.withLock { pause.broadcast() }
  }

  private var isStopped: Bool { state.withLock(\.stopped) }

  private func renew(client: EtcdClient, grantedAt: ContinuousClock.Instant) {
    var expiresAt = grantedAt + .seconds(lease.ttl)
    var next = grantedAt + .seconds(lease.ttl) / 3
    var failing: String?
    while true {
      sleep(until: next)
      if isStopped { return }
      let sent = ContinuousClock.now
      guard sent < expiresAt else {
        lose("not renewed within its time to live of \(lease.ttl) s: \(failing ?? "no answer")")
        return
      }
      do throws(EtcdError) {
        let ttl = try client.keepAlive(lease: lease.id, deadline: min(expiresAt - sent, .seconds(5)))
        expiresAt = sent + .seconds(ttl)
        next = sent + .seconds(ttl) / 3
        failing = nil
      } catch {
        if case .leaseNotFound = error {
          lose("revoked or expired")
          return
        }
        if failing == nil, !isStopped {
          StandardStreams.writeLine(
            "ccsync: cannot renew the lease \(leaseName) (\(error)); retrying until it would expire", toStandardError: true)
        }
        failing = error.description
        next = min(ContinuousClock.now + .milliseconds(250), expiresAt)
      }
    }
  }

  private func lose(_ reason: String) {
    markLost(reason)
    wake.wakeUp()
  }

  /// Waits until `deadline` or until stopped.
  private func sleep(until deadline: ContinuousClock.Instant) {
    pause.withLock {
      while !isStopped && ContinuousClock.now < deadline { pause.wait(until: deadline) }
    }
  }
}
