import Foundation
import Testing
@testable import CCSync
@testable import CCSyncEtcd
import CCSyncProcesses
import CCSyncSystem

/// One or three real etcd members for one test, on loopback (free ports) or each in a host
/// of its own in a ``NetworkLab`` (its address, ports 2379 and 2380): a fresh data directory
/// each, fast election settings; started, stopped, killed, frozen and thawed by the process
/// id this object started, never by name.
///
/// In a lab, the test process reaches the members only from a thread inside the lab's
/// `control` host: ``client(endpoints:credentials:deadline:attemptTimeout:)``'s calls must
/// run in ``onControl(_:)``; ``etcdctl(_:endpoints:)`` and ``leaderIndex()`` do so themselves.
///
/// ```swift
/// let cluster = try EtcdCluster(members: 3)
/// defer { cluster.shutdown() }
/// let client = try cluster.client()
/// ```
///
/// Every member is killed and the data removed by ``shutdown()`` or, failing that, when the
/// object is released, so a failing test leaves no etcd running. `@unchecked Sendable`: the
/// member table is guarded by a lock; tests drive a cluster from one thread.
final class EtcdCluster: @unchecked Sendable {
  /// One member: its ports, data and running process.
  struct Member {
    /// `--name`, e.g. `m0`.
    let name: String
    /// The client port: the gateway's `host:port` is ``endpoint``.
    let clientPort: Int
    /// The port members talk raft on.
    let peerPort: Int
    /// The process, while one runs.
    var process: Subprocess?
    /// Whether the process was sent `SIGSTOP` and not yet `SIGCONT`.
    var isFrozen = false
    /// Whether the client URL is TLS (the cluster's ``TLS``).
    var isSecure = false
    /// The lab host it runs in, or `nil` on loopback.
    var host: NetworkLab.Host? = nil

    /// The address it listens on: `127.0.0.1`, or its lab host's.
    var address: String { host?.address ?? "127.0.0.1" }
    /// `ADDRESS:PORT`, or `https://ADDRESS:PORT` with TLS.
    var endpoint: String { isSecure ? "https://\(address):\(clientPort)" : "\(address):\(clientPort)" }
    /// The client listener's URL, `http://` or `https://`.
    var clientURL: String { (isSecure ? "https" : "http") + "://\(address):\(clientPort)" }
    /// `http://ADDRESS:PORT` of the peer listener.
    var peerURL: String { "http://\(address):\(peerPort)" }
  }

  /// Whether the etcd server is installed (scripts/test installs etcd-server and etcd-client,
  /// and etcd 3.5 for `CCSYNC_ETCD=3.5`; see ``EtcdInstallation``).
  static let isInstalled = EtcdInstallation.chosen.isInstalled
  /// Why the etcd tests skip when it is not.
  static let absentMessage: Comment = EtcdInstallation.chosen.absentMessage

  /// Holds each member's data directory and log.
  private let directory: TemporaryDirectory
  /// The flags every member gets besides its own names, ports and directory.
  private let flags: [String]
  /// The client URLs' TLS, if any.
  let tls: TLS?
  /// The lab the members run in, or `nil` on loopback.
  let lab: NetworkLab?
  /// The lab host the test's own calls run in (``onControl(_:)``).
  let control: NetworkLab.Host?
  /// Guards ``table``.
  private let lock = NSLock()
  /// The members, in start order.
  private var table: [Member]

  /// Starts `members` members and waits until each is healthy and serves `/v3` calls.
  /// - Parameters:
  ///   - members: 1 or 3.
  ///   - flags: extra flags for every member (`--auth-token-ttl`, `--max-request-bytes`).
  ///   - heartbeat: raft heartbeat interval in milliseconds.
  ///   - election: election timeout in milliseconds.
  ///   - tls: TLS on the client URLs (the peer URLs stay plain).
  ///   - lab: the lab to run the members in, each in a host of its own (`m0`, `m1`...), with
  ///     a host `control` for the test's own calls; loopback when `nil`.
  init(members: Int = 1, flags: [String] = [], heartbeat: Int = 10, election: Int = 50, tls: TLS? = nil, lab: NetworkLab? = nil) throws {
    directory = try TemporaryDirectory()
    var table: [Member] = []
    if let lab {
      for index in 0..<members {
        let host = try lab.addHost("m\(index)")
        table.append(Member(name: "m\(index)", clientPort: 2379, peerPort: 2380, isSecure: tls != nil, host: host))
      }
      control = try lab.addHost("control")
    } else {
      let ports = try EtcdCluster.freePorts(2 * members)
      for index in 0..<members {
        table.append(
          Member(name: "m\(index)", clientPort: ports[2 * index], peerPort: ports[2 * index + 1], isSecure: tls != nil))
      }
      control = nil
    }
    self.table = table
    self.tls = tls
    self.lab = lab
    let initialCluster = table.map { "\($0.name)=\($0.peerURL)" }.joined(separator: ",")
    self.flags = [
      "--initial-cluster", initialCluster, "--initial-cluster-state", "new",
      "--initial-cluster-token", "ccsync-test-\(UUID().uuidString.prefix(8))",
      "--heartbeat-interval", String(heartbeat), "--election-timeout", String(election),
    ] + (tls?.flags ?? []) + flags
    do {
      for index in 0..<members {
        try launch(index)
        // Started together, each new member asks the others whether the cluster exists and
        // waits a second per member whose peer port is open but not yet served. One at a
        // time, each finds the earlier ones serving and the later ones not listening.
        if members > 1 { try waitUntilPeerServes(index) }
      }
      for index in 0..<members { try waitUntilReady(index) }
    } catch {
      shutdown()
      throw error
    }
  }

  deinit {
    shutdown()
  }

  /// The members, in start order.
  var members: [Member] { lock.withLock { table } }

  /// Every member's client endpoint, in start order.
  var endpoints: [String] { members.map(\.endpoint) }

  /// A client of this cluster, with all endpoints unless `endpoints` says which.
  func client(
    endpoints: [String]? = nil, credentials: EtcdClient.Credentials? = nil, deadline: Duration = .seconds(5),
    attemptTimeout: Duration = .seconds(2)
  ) throws -> EtcdClient {
    try EtcdClient(
      EtcdClient.Configuration(
        endpoints: endpoints ?? self.endpoints, credentials: credentials, deadline: deadline, attemptTimeout: attemptTimeout,
        tls: tls?.client ?? TLSSettings()))
  }

  /// Stops member `index` politely (`SIGTERM`) and waits for it to exit.
  func stop(_ index: Int) throws {
    try end(index, with: .terminate)
  }

  /// Kills member `index` (`SIGKILL`: no chance to close connections cleanly) and waits.
  func kill(_ index: Int) throws {
    try end(index, with: .kill)
  }

  /// Freezes member `index` (`SIGSTOP`): its sockets stay open and accept connections,
  /// but it answers nothing until ``thaw(_:)``.
  func freeze(_ index: Int) throws {
    try signal(index, Signal(rawValue: SIGSTOP))
    lock.withLock { table[index].isFrozen = true }
    // kill(2) returns before the stop takes effect: a thread still on a CPU could answer one
    // more request. Frozen means every thread of the member shows state T.
    guard let id = members[index].process?.id, waitUntil(deadline: .seconds(5), { EtcdCluster.isStopped(id) }) else {
      throw EtcdClusterError.notRunning(member: index)
    }
  }

  /// Whether every thread of process `id` is stopped (`T` in `/proc/ID/task/TID/stat`).
  private static func isStopped(_ id: Int32) -> Bool {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(id)/task")) ?? []
    return !tasks.isEmpty && tasks.allSatisfy { task in
      guard let stat = try? String(contentsOfFile: "/proc/\(id)/task/\(task)/stat", encoding: .utf8),
        let end = stat.lastIndex(of: ")")
      else { return true }  // the thread has ended
      return stat[stat.index(end, offsetBy: 2)...].hasPrefix("T")
    }
  }

  /// Lets a frozen member run again (`SIGCONT`).
  func thaw(_ index: Int) throws {
    try signal(index, Signal(rawValue: SIGCONT))
    lock.withLock { table[index].isFrozen = false }
  }

  /// Starts a stopped member again on its data directory and waits until it serves.
  func restart(_ index: Int) throws {
    try launch(index)
    try waitUntilReady(index)
  }

  /// The index of the member that is the leader, asking each running member's status.
  /// - Parameter among: the members to ask (every running one by default).
  /// - Throws: when no member asked names itself the leader.
  func leaderIndex(among candidates: [Int]? = nil) throws -> Int {
    let client = try self.client(deadline: .seconds(2))
    let members = self.members
    return try onControl {
      for index in candidates ?? Array(members.indices) where members[index].process != nil && !members[index].isFrozen {
        let status = try client.status(of: HTTPEndpoint(parsing: members[index].endpoint))
        if status.isLeader { return index }
      }
      throw EtcdClusterError.noLeader
    }
  }

  /// Runs `body` where the test process reaches the members: at once on loopback, on a
  /// thread inside the lab's `control` host otherwise (``NetworkLab/inside(_:deadline:_:)``).
  func onControl<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) throws -> Value {
    guard let lab, let control else { return try body() }
    return try lab.inside(control, body)
  }

  /// Runs `etcdctl` (v3 API) against this cluster, or `endpoints`, to completion.
  func etcdctl(_ arguments: [String], endpoints: [String]? = nil) throws -> ChildProcess.Outcome {
    var environment = ProcessInfo.processInfo.environment
    environment["ETCDCTL_API"] = "3"
    let list = (endpoints ?? self.endpoints).joined(separator: ",")
    let files = [("--cacert", tls?.client.caFile), ("--cert", tls?.client.certificateFile), ("--key", tls?.client.privateKeyFile)]
    let tlsFlags = files.compactMap { flag, file in file.map { "\(flag)=\($0)" } }
    let command = [EtcdInstallation.chosen.etcdctl ?? "etcdctl", "--endpoints=\(list)", "--dial-timeout=2s", "--command-timeout=5s"] + tlsFlags + arguments
    let line = lab.flatMap { lab in control.map { lab.command(in: $0, command) } } ?? command
    return try ChildProcess.run(line[0], Array(line.dropFirst()), environment: environment, deadline: .seconds(20))
  }

  /// The value of `key` (`etcdctl get --print-value-only`; empty when there is no such key),
  /// read again until a read succeeds: right after a partition heals, the members may still
  /// be electing a leader, and a linearizable read fails until one is elected.
  /// - Throws: ``EtcdClusterError/unreadable(key:error:)`` with etcdctl's last error when no
  ///   read succeeded within `deadline`.
  func value(of key: String, deadline: Duration = .seconds(60)) throws -> String {
    var last: ChildProcess.Outcome?
    let read = try waitUntil(deadline: deadline) {
      last = try etcdctl(["get", "--print-value-only", key])
      return last?.succeeded == true
    }
    guard read, let last else { throw EtcdClusterError.unreadable(key: key, error: last?.summary ?? "no read") }
    return last.standardOutput
  }

  /// Kills every member (thawing frozen ones first is not needed: `SIGKILL` ends a stopped
  /// process too), reaps them, and removes the data. Idempotent.
  func shutdown() {
    let processes = lock.withLock { () -> [Subprocess] in
      defer { for index in table.indices { table[index].process = nil } }
      return table.compactMap(\.process)
    }
    for process in processes {
      try? process.send(.kill)
      _ = try? process.waitForExit()
    }
    directory.remove()
  }

  /// The last lines member `index` logged, for failure messages.
  func logTail(_ index: Int, lines: Int = 15) -> String {
    let text = (try? String(contentsOfFile: logPath(index), encoding: .utf8)) ?? ""
    return text.split(separator: "\n").suffix(lines).joined(separator: "\n")
  }

  // MARK: Starting and waiting

  /// Where member `index` writes its log.
  private func logPath(_ index: Int) -> String { directory.file("m\(index).log") }

  /// Starts member `index`'s process, its output appended to its log.
  private func launch(_ index: Int) throws {
    let member = members[index]
    let etcd = [
      EtcdInstallation.chosen.etcd ?? "etcd", "--name", member.name, "--data-dir", directory.file(member.name),
      "--listen-client-urls", member.clientURL, "--advertise-client-urls", member.clientURL,
      "--listen-peer-urls", member.peerURL, "--initial-advertise-peer-urls", member.peerURL,
    ] + flags
    let arguments = lab.flatMap { lab in member.host.map { lab.command(in: $0, etcd) } } ?? etcd
    // Appends, so that a restarted member's log follows the first run's.
    let descriptor = open(logPath(index), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    let output = FileDescriptor(owning: descriptor, path: logPath(index))
    let input = try FileDescriptor.openForReading("/dev/null")
    // Other tests' children's pipes are open in this process now and then: a member must not
    // hold them open for its whole life, or those tests wait for it to end.
    let process = try Subprocess.spawn(
      arguments, standardInput: input, standardOutput: output, standardError: output, closingInheritedDescriptors: true)
    lock.withLock { table[index].process = process }
  }

  /// Waits until member `index`'s peer listener answers HTTP (the member got past its
  /// bootstrap checks and serves raft).
  private func waitUntilPeerServes(_ index: Int) throws {
    let peer = try HTTPEndpoint(parsing: members[index].peerURL)
    let http = HTTPClient()
    try waitUntilServing(index, what: "peer listener") {
      let response = try? http.send(
        HTTPRequest(method: "GET", path: "/members"), to: peer, deadline: .now + .milliseconds(300), idempotent: true)
      return response?.status == 200
    }
  }

  /// Waits until member `index` says it is healthy and answers a range through the
  /// gateway: `/health` alone does not exercise the gateway (with a wrong listen address the
  /// gateway cannot reach its gRPC server and every `/v3` call fails while `/health` is fine).
  private func waitUntilReady(_ index: Int) throws {
    let endpoint = try HTTPEndpoint(parsing: members[index].endpoint)
    let http = HTTPClient(connector: TLSConnector(settings: tls?.client ?? TLSSettings()))
    let range = HTTPRequest(path: "/v3/kv/range", body: Array(#"{"key":"AA=="}"#.utf8))
    try waitUntilServing(index, what: "client gateway") {
      guard let health = try? http.send(HTTPRequest(method: "GET", path: "/health"), to: endpoint, deadline: .now + .milliseconds(500), idempotent: true),
        String(decoding: health.body, as: UTF8.self).contains(#""health":"true""#)
      else { return false }
      guard let answer = try? http.send(range, to: endpoint, deadline: .now + .milliseconds(500), idempotent: true) else { return false }
      // A range, or with authentication on an error from etcd itself (`etcdserver: user
      // name is empty`): either way the gateway reached the gRPC server behind it.
      let text = String(decoding: answer.body, as: UTF8.self)
      return (answer.status == 200 && text.contains(#""revision""#)) || text.contains("etcdserver: ")
    }
  }

  /// Polls `condition` until it holds, failing at once if the member exited and after 15 s.
  private func waitUntilServing(_ index: Int, what: String, _ condition: @escaping @Sendable () -> Bool) throws {
    let deadline = ContinuousClock.now + .seconds(15)
    while !((try? onControl(condition)) ?? false) {
      if let process = members[index].process, let status = try process.exitStatusIfExited() {
        lock.withLock { table[index].process = nil }
        throw EtcdClusterError.exited(member: index, status: status.shellStatus, log: logTail(index))
      }
      guard ContinuousClock.now < deadline else {
        throw EtcdClusterError.notServing(member: index, what: what, log: logTail(index))
      }
      usleep(5_000)
    }
  }

  /// Sends `signal` to member `index` and reaps it. A member asked to stop politely gets
  /// 10 s (one whose peers are gone tries to hand over leadership first, which takes a few
  /// seconds), then `SIGKILL`.
  private func end(_ index: Int, with signal: Signal) throws {
    guard let process = members[index].process else { return }
    // A stopped process holds SIGTERM until it runs again; SIGKILL ends it stopped or not.
    if members[index].isFrozen && signal != .kill { try thaw(index) }
    try process.send(signal)
    let exited = try waitUntil(deadline: .seconds(10)) { try process.exitStatusIfExited() != nil }
    if !exited {
      try process.send(.kill)
      _ = try process.waitForExit()
    }
    lock.withLock {
      table[index].process = nil
      table[index].isFrozen = false
    }
  }

  /// Sends `signal` to member `index`, which must be running.
  private func signal(_ index: Int, _ signal: Signal) throws {
    guard let process = members[index].process else { throw EtcdClusterError.notRunning(member: index) }
    try process.send(signal)
  }

  /// A TCP port free on 127.0.0.1 right now; see ``freePorts(_:)``.
  static func freePort() throws -> Int {
    try freePorts(1)[0]
  }

  /// `count` different TCP ports free on 127.0.0.1 right now: bind port 0 that many times,
  /// keeping each socket open until all are chosen (so the kernel cannot hand out one port
  /// twice), read what it chose, close. (Never `--listen-client-urls http://127.0.0.1:0`:
  /// the gateway dials its listen address literally, so `/health` works and every `/v3`
  /// call fails.)
  static func freePorts(_ count: Int) throws -> [Int] {
    try LoopbackPorts.free(count)
  }
}

extension EtcdCluster {
  /// TLS on the members' client URLs: the certificate each serves, the CA whose client
  /// certificates it requires (if any), and what the cluster's own clients present.
  struct TLS {
    var certificateFile: String
    var keyFile: String
    /// When set, members require a client certificate this CA signed (`--trusted-ca-file`,
    /// which makes etcd ask for one, and `--client-cert-auth`).
    var clientCAFile: String?
    /// What the readiness checks, ``client(endpoints:credentials:deadline:attemptTimeout:)``
    /// and ``etcdctl(_:endpoints:)`` use.
    var client: TLSSettings

    /// The members' flags.
    var flags: [String] {
      ["--cert-file", certificateFile, "--key-file", keyFile]
        + (clientCAFile.map { ["--trusted-ca-file", $0, "--client-cert-auth"] } ?? [])
    }
  }
}

/// Why a test cluster could not do what was asked.
enum EtcdClusterError: Error, CustomStringConvertible {
  case exited(member: Int, status: Int32, log: String)
  case notServing(member: Int, what: String, log: String)
  case notRunning(member: Int)
  case noLeader
  case unreadable(key: String, error: String)

  var description: String {
    switch self {
    case .exited(let member, let status, let log): "etcd member \(member) exited with status \(status):\n\(log)"
    case .notServing(let member, let what, let log): "etcd member \(member): \(what) not serving after 15 s:\n\(log)"
    case .notRunning(let member): "etcd member \(member) is not running"
    case .noLeader: "no running etcd member is the leader"
    case .unreadable(let key, let error): "etcdctl could not read '\(key)' within the deadline: \(error)"
    }
  }
}
