import CCSyncEtcd
import CCSyncJSON
import CCSyncSystem
import Dispatch
import Glibc

/// What one host's mirror says of the key: which revision its file holds, or which one it
/// refused and why. Kept at `KEY.ccsync-status/HOST` under a lease of the mirror's, so a
/// host whose mirror died disappears within the lease's time to live (docs/FLEET.md).
/// `Sendable`.
package struct HostStatus: Sendable, Equatable {
  /// Where a host stands.
  package enum State: String, Sendable {
    /// Its file holds the key's version at ``HostStatus/revision``.
    case applied
    /// It refused the key's version at ``HostStatus/revision`` (the gate): ``HostStatus/reason``.
    case rejected
  }

  /// The name the mirror reports under (`--host-name`, by default the host's name).
  package var host: String
  package var revision: Int64
  package var state: State
  package var reason: String?
  /// When it reached this state, ISO 8601 UTC.
  package var since: String
  /// The machine and process of the mirror, to tell a restarted mirror of the same host
  /// from another host under the same name.
  package var machine: String
  package var pid: Int32

  /// The key the statuses of `key` are kept under: `KEY.ccsync-status/`.
  package static func prefix(of key: String) -> String { key + ".ccsync-status/" }

  var json: JSONValue {
    var object = JSONObject()
    object["host"] = .string(host)
    object["revision"] = .number(JSONNumber(revision))
    object["state"] = .string(state.rawValue)
    if let reason { object["reason"] = .string(reason) }
    object["since"] = .string(since)
    object["machine"] = .string(machine)
    object["pid"] = .number(JSONNumber(Int64(pid)))
    return .object(object)
  }

  /// A status read back; `nil` for a value that is not one (a key written by something else).
  package init?(bytes: [UInt8]) {
    guard case .object(let object)? = try? JSONValue(parsing: bytes),
      case .string(let host)? = object["host"], let revision = object["revision"]?.numberValue?.int64Value,
      case .string(let stateText)? = object["state"], let state = State(rawValue: stateText),
      case .string(let since)? = object["since"], case .string(let machine)? = object["machine"],
      let pid = object["pid"]?.numberValue?.int64Value
    else { return nil }
    var reason: String?
    if case .string(let text)? = object["reason"] { reason = text }
    self.init(host: host, revision: revision, state: state, reason: reason, since: since, machine: machine, pid: Int32(truncatingIfNeeded: pid))
  }

  package init(host: String, revision: Int64, state: State, reason: String?, since: String, machine: String, pid: Int32) {
    self.host = host
    self.revision = revision
    self.state = state
    self.reason = reason
    self.since = since
    self.machine = machine
    self.pid = pid
  }

  /// Checks a host name: not empty, no slash (it is one key's last component).
  /// - Throws: ``StoreError/invalidLocation(_:reason:)``.
  package static func checkName(_ name: String) throws(StoreError) {
    if name.isEmpty || name.contains("/") {
      throw .invalidLocation(name, reason: "a host name must be non-empty and hold no '/'")
    }
  }
}

/// A mirror's reports of its host's status, under a lease a ``LeaseKeeper`` keeps alive (the
/// lock's lease keeper); a lease lost (expired during an outage) is granted again and the last
/// report put back under it. The first report claims the host's name: a name a live mirror
/// of another process holds is refused. `Sendable`: its state is behind a `Protected`.
package final class FleetStatusReporter: Sendable {
  private struct State {
    var lease: LeaseKeeper?
    var last: HostStatus?
    var stopped = false
    /// The claim waits for the cluster to answer (a mirror serves its file meanwhile).
    var claimed = false
    /// The name was found taken after the start: nothing more is reported.
    var refused = false
    /// The report to send next (the latest asked for: older ones are dropped unsent), and
    /// whether the sending queue is at work.
    var next: (status: HostStatus.State, revision: Int64, reason: String?)?
    var sending = false
    /// The last report could not be put: it is tried again, and said no more until one lands.
    var failing = false
  }

  /// At most one report is sent per this interval: under a write every 10 ms a host's
  /// status lags by at most this much, and the cluster gets a fraction of the puts.
  static let reportInterval: Duration = .milliseconds(25)
  /// How long a report that could not be put first waits before it is tried again (unless a
  /// newer one replaces it); each retry that fails doubles the wait, up to a third of the
  /// lease's time to live, and every wait is drawn a quarter either way, so that a fleet back
  /// from an outage does not put all its reports at once.
  static let firstRetryDelay: Duration = .seconds(1)

  /// The retry delay after one of `delay` failed: twice as long, up to a third of `ttl`
  /// seconds (and never below ``firstRetryDelay``).
  static func retryDelay(after delay: Duration, ttl: Int64) -> Duration {
    min(delay * 2, max(firstRetryDelay, .seconds(ttl) / 3))
  }

  /// `delay` drawn a quarter either way.
  static func jittered(_ delay: Duration) -> Duration {
    delay * Double.random(in: 0.75...1.25)
  }

  let host: String
  let ttl: Int64
  /// The key whose holders it reports.
  let location: EtcdLocation
  private let key: [UInt8]
  private let client: EtcdClient
  private let logger: DiagnosticLog
  private let state = Protected(State())
  private let pause = ConditionLock()
  /// Sends the reports, off the mirror's sync: a sync does not wait for its report's put.
  private let reports = DispatchQueue(label: "ccsync.status")

  /// A reporter for `location`'s key under `host`, with leases of `ttl` seconds.
  package init(location: EtcdLocation, host: String, ttl: Int64, logger: DiagnosticLog) throws(StoreError) {
    try HostStatus.checkName(host)
    self.host = host
    self.ttl = ttl
    self.location = location
    self.key = Array((HostStatus.prefix(of: location.key) + host).utf8)
    self.client = try EtcdClients.shared.client(for: location).get()
    self.logger = logger
  }

  /// Claims the name when the cluster answers: refused when another live mirror holds it
  /// (another machine, or a process of this machine that still runs). A cluster that does
  /// not answer yet is claimed from at the first report.
  /// - Throws: ``StoreError/lockUnavailable(path:)`` naming the status key when the name is
  ///   taken.
  package func claim() throws(StoreError) {
    do {
      try claimNow()
    } catch {
      if case .lockUnavailable = error { throw error }
    }
  }

  private func claimNow() throws(StoreError) {
    if state.withLock({ $0.claimed }) { return }
    let name = String(decoding: key, as: UTF8.self)
    let held = try call { () throws(EtcdError) in try client.get(key).keyValue }
    if let held, held.lease != 0, let status = HostStatus(bytes: held.value) {
      let sameMachineDead = status.machine == Environment.hostName && !Environment.processIsAlive(status.pid)
      if !sameMachineDead { throw .lockUnavailable(path: name) }
    }
    keepLease(try LeaseKeeper.grant(client: client, ttl: ttl, name: name, logger: .silent))
    state.withLock { $0.claimed = true }
  }

  /// Reports under `keeper`'s lease from now on, and when it is lost, grants another (every
  /// third of the time to live until the cluster answers) and puts the last report back.
  private func keepLease(_ keeper: LeaseKeeper) {
    let stopped = state.withLock { state -> Bool in
      if !state.stopped { state.lease = keeper }
      return state.stopped
    }
    if stopped {
      keeper.stop()
      return
    }
    keeper.onLoss { [self] _ in replaceLostLease() }
  }

  /// Runs on the lost lease's renewing thread, which has nothing else left to do.
  private func replaceLostLease() {
    let name = String(decoding: key, as: UTF8.self)
    while !isStopped {
      if let granted = try? LeaseKeeper.grant(client: client, ttl: ttl, name: name, logger: .silent) {
        let last = state.withLock { state -> HostStatus? in
          defer { state.last = nil }
          // A report waiting to be sent is newer than the one put under the lost lease.
          return state.next == nil ? state.last : nil
        }
        keepLease(granted)
        if let last { report(last.state, revision: last.revision, reason: last.reason) }
        return
      }
      let next = ContinuousClock.now + .seconds(ttl) / 3
      pause.withLock {
        while !isStopped && ContinuousClock.now < next { pause.wait(until: next) }
      }
    }
  }

  /// Reports `state` of `revision`, soon and off the caller's thread; a report superseded
  /// before it was sent is dropped, and one that cannot be put is said once and tried again
  /// (see ``firstRetryDelay``) until it lands or a newer one replaces it.
  package func report(_ status: HostStatus.State, revision: Int64, reason: String? = nil) {
    let startsSending = state.withLock { state -> Bool in
      state.next = (status, revision, reason)
      defer { state.sending = true }
      return !state.sending
    }
    guard startsSending else { return }
    reports.async { [self] in
      var lastSent: ContinuousClock.Instant?
      var wait = Self.reportInterval
      var retryDelay = Self.firstRetryDelay
      while true {
        // The latest report is taken once the wait since the last attempt has passed.
        if let lastSent {
          let left = lastSent + wait - ContinuousClock.now
          if left > .zero { usleep(UInt32(left / .microseconds(1))) }
        }
        guard let next = takeNext() else { return }
        if send(next.status, revision: next.revision, reason: next.reason) {
          (wait, retryDelay) = (Self.reportInterval, Self.firstRetryDelay)
        } else {
          state.withLock { state in
            if state.next == nil { state.next = next }
          }
          wait = Self.jittered(retryDelay)
          retryDelay = Self.retryDelay(after: retryDelay, ttl: ttl)
        }
        lastSent = .now
      }
    }
  }

  /// The report to send next, or `nil` (and the sending stops) when there is none.
  private func takeNext() -> (status: HostStatus.State, revision: Int64, reason: String?)? {
    state.withLock { state in
      guard let next = state.next else {
        state.sending = false
        return nil
      }
      state.next = nil
      return next
    }
  }

  /// Puts the report of `status` of `revision`, claiming the name first if it is not yet.
  /// - Returns: `false` when the cluster could not take it (it is to be tried again); `true`
  ///   when it was put, or is not to be (stopped, the name refused, nothing new).
  private func send(_ status: HostStatus.State, revision: Int64, reason: String?) -> Bool {
    guard !isStopped else { return true }
    if !state.withLock({ $0.claimed || $0.refused }) {
      do {
        try claimNow()
      } catch {
        if case .lockUnavailable(let key) = error {
          state.withLock { $0.refused = true }
          logger.log(.error, "the host name '\(host)' is held by another live mirror ('\(key)'); this host's status is not reported")
          return true
        }
        return failedToReport(error)
      }
    }
    let (keeper, previous) = state.withLock { ($0.lease, $0.last) }
    guard let lease = keeper?.leaseID else { return true }
    if let previous, previous.state == status, previous.revision == revision, previous.reason == reason { return true }
    let since = previous?.state == status && previous?.reason == reason ? previous?.since : nil
    let report = HostStatus(
      host: host, revision: revision, state: status, reason: reason,
      since: since ?? FileSystem.isoTimestamp(FileSystem.currentTime()), machine: Environment.hostName, pid: Environment.processID)
    do throws(EtcdError) {
      try client.put(key, value: report.json.formattedBytes(.compact), lease: lease)
      state.withLock {
        $0.last = report
        $0.failing = false
      }
      return true
    } catch {
      return failedToReport(error)
    }
  }

  /// A report the cluster did not take: said at the first failure of a series (the retries
  /// only at debug level). A put that crossed `stop()`'s revoke finds the lease gone: the host
  /// is leaving, and nothing is said or tried again.
  private func failedToReport(_ error: some Error) -> Bool {
    let (stopped, first) = state.withLock { state -> (Bool, Bool) in
      defer { state.failing = true }
      return (state.stopped, !state.failing)
    }
    if stopped { return true }
    let message = "cannot report the status of host '\(host)': \(error)"
    if first {
      logger.log(.warning, message + "; trying again")
    } else {
      logger.log(.debug, message)
    }
    return false
  }

  /// The key's current revision, for a report after a sync.
  package func keyRevision(of location: EtcdLocation) -> Int64? {
    (try? client.get(Array(location.key.utf8)).keyValue)?.modRevision
  }

  /// Stops renewing and revokes the lease, so the host disappears at once.
  package func stop() {
    let keeper = state.withLock { state -> LeaseKeeper? in
      state.stopped = true
      return state.lease
    }
    pause.withLock { pause.broadcast() }
    keeper?.stop()
    if let keeper { try? client.revokeLease(keeper.leaseID, deadline: .seconds(1)) }
  }

  private var isStopped: Bool { state.withLock { $0.stopped } }

  private func call<Result>(_ body: () throws(EtcdError) -> Result) throws(StoreError) -> Result {
    do {
      return try body()
    } catch {
      throw StoreError(error, name: String(decoding: key, as: UTF8.self))
    }
  }
}

/// The fleet's answer to a key's versions: the hosts whose mirrors report under
/// `KEY.ccsync-status/`, read by `ccsync status` and waited for by `--wait-hosts`.
package struct FleetView: Sendable {
  /// One host as the status command shows it.
  package struct Host: Sendable {
    package var status: HostStatus
    /// `applied`, `behind` (applied an older revision) or `rejected`.
    package var state: String
    package var age: Double?
  }

  package var revision: Int64?
  package var hosts: [Host]
  /// Status keys whose values are not a host's status (written by something else).
  package var foreign: [String]

  /// Reads the statuses of `location`'s key.
  package static func read(_ location: EtcdLocation) throws(StoreError) -> FleetView {
    let client = try EtcdClients.shared.client(for: location).get()
    do {
      let revision = try client.get(Array(location.key.utf8)).keyValue?.modRevision
      let prefix = HostStatus.prefix(of: location.key)
      let keys = try client.range(.prefix(Array(prefix.utf8))).keyValues
      let now = seconds(since1970: FileSystem.currentTime())
      var hosts: [Host] = []
      var foreign: [String] = []
      for keyValue in keys {
        guard let status = HostStatus(bytes: keyValue.value) else {
          foreign.append(String(decoding: keyValue.key, as: UTF8.self))
          continue
        }
        let state: String
        switch status.state {
        case .rejected: state = "rejected"
        case .applied: state = revision.map { status.revision >= $0 } ?? true ? "applied" : "behind"
        }
        hosts.append(Host(status: status, state: state, age: FileSystem.seconds(fromISOTimestamp: status.since).map { now - $0 }))
      }
      return FleetView(revision: revision, hosts: hosts.sorted { $0.status.host < $1.status.host }, foreign: foreign)
    } catch {
      throw StoreError(error, name: location.description)
    }
  }

  private static func seconds(since1970 time: FileIdentity.Timestamp) -> Double {
    Double(time.seconds) + Double(time.nanoseconds) / 1e9
  }

  /// `3 of 4 hosts at revision 812; host-c rejected it: REASON`.
  package var summary: String {
    guard !hosts.isEmpty else { return "no host reports its status" }
    let at = hosts.filter { $0.state == "applied" }.count
    var line = "\(at) of \(hosts.count) host\(hosts.count == 1 ? "" : "s") at revision \(revision.map(String.init) ?? "-")"
    for host in hosts where host.state == "rejected" {
      line += "; \(host.status.host) rejected \(host.status.revision == revision ? "it" : "revision \(host.status.revision)"): \(host.status.reason ?? "")"
    }
    let behind = hosts.filter { $0.state == "behind" }.map(\.status.host)
    if !behind.isEmpty { line += "; behind: " + behind.joined(separator: ", ") }
    return line
  }
}

