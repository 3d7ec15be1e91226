import CCSyncEtcd
import CCSyncSystem

/// Keeps one etcd lease alive, renewing it on a thread of its own every third of its time to
/// live, and says when it is lost: the cluster answers that it is gone (revoked, expired), it
/// could not be renewed before it would have expired (a partition), or its owner declares it
/// lost (``markLost(_:)``: the lock key it carries was deleted). What holds the lease (a lock,
/// a status key) is gone with it: the loss notice (``onLoss(_:)``, ``losses``) is the moment
/// to stop acting as its holder (docs/SEMANTICS.md, "Locks").
///
/// A lease is lost once: after the notice the keeper renews no more. Renewal failures that
/// leave time before expiry are retried every 250 ms, with one warning to the logger.
///
/// `Sendable`: its state is behind a `Protected`.
public final class LeaseKeeper: Sendable {
  private struct State {
    var stopped = false
    var lost: String?
    var handlers: [@Sendable (String) -> Void] = []
    /// What ``stop()`` runs: the end of the ``losses`` streams.
    var stopHandlers: [@Sendable () -> Void] = []
  }

  /// The lease's id.
  public let leaseID: Int64
  /// The time to live it was granted, in seconds.
  public let ttl: Int64
  private let state = Protected(State())
  /// Wakes the renewing thread's pause when stopped.
  private let pause = ConditionLock()
  private let logger: DiagnosticLog

  /// Starts renewing `lease`, granted at `grantedAt` (taken before the grant was sent, so
  /// that expiry is never later than the cluster's).
  /// - Throws: `SystemError` when the renewing thread cannot be started.
  package init(
    client: EtcdClient, lease: EtcdLease, grantedAt: ContinuousClock.Instant, logger: DiagnosticLog
  ) throws(SystemError) {
    leaseID = lease.id
    ttl = lease.ttl
    self.logger = logger
    let thread = try BackgroundThread(name: "ccsync-lease") { [self] in renew(client: client, grantedAt: grantedAt) }
    thread.detach()
  }

  /// Grants a lease of `ttl` seconds on `client`'s cluster and starts keeping it alive.
  /// - Throws: ``StoreError`` naming `name` when the cluster refuses or cannot be reached;
  ///   ``StoreError/system(_:)`` when the renewing thread cannot be started (the lease is
  ///   then revoked).
  package static func grant(client: EtcdClient, ttl: Int64, name: String, logger: DiagnosticLog) throws(StoreError) -> LeaseKeeper {
    let grantedAt = ContinuousClock.now
    let lease: EtcdLease
    do {
      lease = try client.grantLease(ttl: ttl)
    } catch {
      throw StoreError(error, name: name)
    }
    do {
      return try LeaseKeeper(client: client, lease: lease, grantedAt: grantedAt, logger: logger)
    } catch {
      _ = try? client.revokeLease(lease.id, deadline: .seconds(2))
      throw .system(error)
    }
  }

  /// Grants a lease of `ttl` seconds on the cluster of `location` and starts keeping it
  /// alive; ``stop()`` ends the renewals (revoke it with ``revoke(location:)``).
  /// - Parameters:
  ///   - ttl: seconds; the cluster raises it to its minimum.
  ///   - logger: where a renewal failure's warning goes.
  /// - Throws: ``StoreError`` when the cluster refuses or cannot be reached.
  public static func grant(
    on location: EtcdLocation, ttl: Int64, logger: DiagnosticLog = .standardError
  ) throws(StoreError) -> LeaseKeeper {
    try grant(client: try EtcdClients.shared.client(for: location).get(), ttl: ttl, name: location.description, logger: logger)
  }

  /// The lease's id as etcdctl prints it (`lease list`, `lease revoke`): 16 hex digits.
  public var leaseName: String {
    let hex = String(UInt64(bitPattern: leaseID), radix: 16)
    return String(repeating: "0", count: max(16 - hex.count, 0)) + hex
  }

  /// Why the lease (and what it holds) is lost, once it is; `nil` while it is kept.
  public var lostReason: String? { state.withLock { $0.lost } }

  /// Calls `handler` once, with the reason, when the lease is lost: at once (on this thread)
  /// if it is lost already, otherwise on the thread that notices the loss (the renewing one,
  /// or a watch's). Never called after ``stop()``. Keep it short: wake whoever must act.
  public func onLoss(_ handler: @escaping @Sendable (String) -> Void) {
    let lost = state.withLock { state -> String? in
      if state.lost == nil && !state.stopped { state.handlers.append(handler) }
      return state.lost
    }
    if let lost { handler(lost) }
  }

  /// The loss notice as an `AsyncStream`: one reason when the lease is lost, then the end;
  /// ends with nothing when the keeper is stopped first (the lock released).
  public var losses: AsyncStream<String> {
    let (stream, continuation) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(1))
    let lost = state.withLock { state -> String? in
      if state.lost == nil && !state.stopped {
        state.handlers.append { reason in
          continuation.yield(reason)
          continuation.finish()
        }
        state.stopHandlers.append { continuation.finish() }
      }
      return state.lost
    }
    if let lost { continuation.yield(lost) }
    if lost != nil || isStopped { continuation.finish() }
    return stream
  }

  /// Records that the lease, or what it holds, is lost (the first reason stays) and tells the
  /// ``onLoss(_:)`` handlers. Nothing once stopped.
  public func markLost(_ reason: String) {
    let handlers = state.withLock { state -> [@Sendable (String) -> Void] in
      guard state.lost == nil && !state.stopped else { return [] }
      state.lost = reason
      defer { state.handlers = [] }
      return state.handlers
    }
    for handler in handlers { handler(reason) }
    let finishing = state.withLock { state -> [@Sendable () -> Void] in
      defer { state.stopHandlers = [] }
      return state.stopHandlers
    }
    for finish in finishing { finish() }
  }

  /// Stops renewing (the lease then expires within its time to live, unless revoked). No
  /// loss notice follows. Idempotent.
  public func stop() {
    let finishing = state.withLock { state -> [@Sendable () -> Void] in
      defer {
        state.stopped = true
        state.handlers = []
        state.stopHandlers = []
      }
      return state.stopHandlers
    }
    pause.withLock { pause.broadcast() }
    for finish in finishing { finish() }
  }

  /// Stops renewing and revokes the lease: what it holds goes at once.
  /// - Throws: ``StoreError`` when the cluster does not answer (the lease then expires within
  ///   its time to live); a lease already gone is not an error.
  public func revoke(location: EtcdLocation) throws(StoreError) {
    stop()
    let client = try EtcdClients.shared.client(for: location).get()
    do throws(EtcdError) {
      try client.revokeLease(leaseID, deadline: .seconds(5))
    } catch .leaseNotFound {
      return
    } catch {
      throw StoreError(error, name: location.description)
    }
  }

  private var isStopped: Bool { state.withLock { $0.stopped } }

  private func renew(client: EtcdClient, grantedAt: ContinuousClock.Instant) {
    var expiresAt = grantedAt + .seconds(ttl)
    var next = grantedAt + .seconds(ttl) / 3
    var failing: String?
    while true {
      sleep(until: next)
      if isStopped { return }
      let sent = ContinuousClock.now
      guard sent < expiresAt else {
        markLost("not renewed within its time to live of \(ttl) s: \(failing ?? "no answer")")
        return
      }
      do throws(EtcdError) {
        let renewed = try client.keepAlive(lease: leaseID, deadline: min(expiresAt - sent, .seconds(5)))
        expiresAt = sent + .seconds(renewed)
        next = sent + .seconds(renewed) / 3
        failing = nil
      } catch {
        if case .leaseNotFound = error {
          markLost("revoked or expired")
          return
        }
        if failing == nil, !isStopped {
          logger.log(.warning, "cannot renew the lease \(leaseName) (\(error)); retrying until it would expire")
        }
        failing = error.description
        next = min(ContinuousClock.now + .milliseconds(250), expiresAt)
      }
    }
  }

  /// Waits until `deadline` or until stopped.
  private func sleep(until deadline: ContinuousClock.Instant) {
    pause.withLock {
      while !isStopped && ContinuousClock.now < deadline { pause.wait(until: deadline) }
    }
  }
}
