import CCSync
import CCSyncProcesses

/// `ccsync lock [-n] [-w SECS] [-E CODE] [--ttl SECS] etcd://[HOSTS]/NAME -- CMD ARGS...`: run
/// a command while holding etcd's lock NAME, taken with the library's ``EtcdLocker`` (the
/// v3lock service's lock; `etcdctl lock NAME` takes the same one).
///
/// - The lock's lease (``EtcdLocker/defaultTTL`` seconds unless `--ttl`) is kept alive by the
///   library while the lock is awaited and while CMD runs.
/// - When the lock is lost (its lease's loss notice), mutual exclusion is gone: CMD gets
///   SIGTERM, SIGKILL 5 s later, and the command exits 75 naming the lease.
/// - CMD gets the lock's fencing token in `CCSYNC_LOCK_REVISION`.
/// - `-n` and `-w SECS` are the locker's waits; a lock not taken exits 1 (or CODE), leaving
///   nothing behind.
/// - The lock is released by revoking the lease, which deletes the key.
enum EtcdLockCommand {
  /// How long CMD has between SIGTERM and SIGKILL once the lock is lost.
  static let killDelay: Duration = .seconds(5)

  static func run(
    location: EtcdLocation, command: [String], wait: ContentionWait, ttl: Int64, conflictCode: Int32
  ) throws -> Int32 {
    // Caught while the lock is awaited, so that the lease is revoked before ccsync ends by
    // them; SIGINT and SIGQUIT are left to CMD once it runs, as for a file's lock.
    let signals = try SignalPipe.install([.interrupt, .terminate, .hangUp, .quit, .childStatusChanged])
    let locker = try EtcdLocker(location: location, ttl: ttl)
    let held: HeldEtcdLock
    do {
      held = try acquire(locker, wait: wait, signals: signals)
    } catch StoreError.lockUnavailable(let holder) {
      let known = holder != location.key ? " (lock key '\(holder)')" : ""
      throw CommandFailure(conflictCode, "'\(location.description)' is locked by another holder\(known)")
    }
    try Signal.interrupt.ignore()
    try Signal.quit.ignore()
    return try runWhileHolding(command, lock: held, signals: signals)
  }

  /// Takes the lock on a thread of its own, while this one waits for it or for a signal: a
  /// signal revokes the lease of the attempt under way and ends the process by it.
  private static func acquire(_ locker: EtcdLocker, wait: ContentionWait, signals: SignalPipe) throws -> HeldEtcdLock {
    let wake = try WakeUpChannel()
    let outcome = Protected<Result<HeldEtcdLock, any Error>?>(nil)
    let waiter = try BackgroundThread(name: "ccsync-lock") {
      let result = Result { () throws -> HeldEtcdLock in try locker.acquire(wait: wait) }
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
  private static func runWhileHolding(_ command: [String], lock: HeldEtcdLock, signals: SignalPipe) throws -> Int32 {
    let wake = try WakeUpChannel()
    lock.lease.onLoss { _ in wake.wakeUp() }
    let child = ChildSupervisor(command: command, killDelay: killDelay)
    do {
      try child.startReportingFailure(environment: ["CCSYNC_LOCK_REVISION": String(lock.fencingToken)])
    } catch {
      lock.release()
      throw error
    }
    var lost: String?
    let status = child.runToEnd(signals: signals, wake: wake, stopReason: { lock.lostReason }) { reason in
      lost = reason
      report(lost: reason, lock: lock, command: command[0])
    }
    // A loss noticed only now may still have left CMD running without the lock.
    if lost == nil, let reason = lock.lostReason {
      lost = reason
      report(lost: reason, lock: lock, command: nil)
    }
    lock.release()
    return lost == nil ? status : ExitCode.lockLost
  }

  private static func report(lost reason: String, lock: HeldEtcdLock, command: String?) {
    let stopping = command.map { ": stopping '\($0)' (SIGTERM, then SIGKILL after \(killDelay.components.seconds) s)" } ?? ""
    StandardStreams.writeLine(
      "ccsync: lost the lock '\(lock.location.description)' (lease \(lock.lease.leaseName): \(reason)); mutual exclusion is gone\(stopping)",
      toStandardError: true)
  }
}
