import Foundation
import Testing

/// Hosts with networks of their own for one test: a network namespace per host, each joined
/// by a veth pair to one bridge that lives in a namespace of its own, on private addresses
/// `10.200.N.H/24` (N chosen per run). The host's own network is never touched: no
/// interface, route or address is added outside the namespaces made here.
///
/// ```swift
/// let lab = try NetworkLab()
/// defer { lab.shutdown() }
/// let a = try lab.addHost("a"), b = try lab.addHost("b")
/// try lab.cut(a)      // a's link down: a reaches nobody, nobody reaches a
/// try lab.heal(a)
/// let outcome = try lab.run(in: b, "ping", ["-c1", a.address])
/// ```
///
/// Namespaces are named `ccslab-PID-NAME` (PID the test process's), so runs in parallel
/// never share one, and a new lab removes those of earlier runs whose process is gone (a
/// crashed run): only names with this prefix are ever touched. ``shutdown()``, or failing that
/// the release of the object, deletes every namespace it made (their veth ends go with them).
/// Processes started in a host are the caller's to stop, by their ids.
///
/// `@unchecked Sendable`: the host list is guarded by a lock.
final class NetworkLab: @unchecked Sendable {
  /// One host: a namespace with one interface, `eth0`, on the lab's bridge.
  struct Host: Sendable, Hashable {
    /// The name the test gave it, e.g. `m0`.
    var name: String
    /// The namespace's name, `ccslab-PID-m0`.
    var namespace: String
    /// Its address on the bridge, `10.200.N.H`.
    var address: String
    /// Its veth end in the bridge's namespace, the one ``NetworkLab/cut(_:)`` takes down.
    var bridgePort: String
  }

  /// Whether this process can make namespaces: root, and `ip` (iproute2) installed.
  static let isAvailable = geteuid() == 0 && ChildProcess.find("ip") != nil
  /// Why the partition tests skip when it cannot.
  static let unavailableMessage: Comment = "network namespaces need root and 'ip' (iproute2; scripts/test installs it)"
  /// The prefix of every namespace a lab makes.
  static let prefix = "ccslab-"

  /// The bridge's namespace, `ccslab-PID-bridge`.
  let bridgeNamespace: String
  /// The third byte of this lab's addresses.
  let subnet: Int
  private let lock = NSLock()
  private var hosts: [Host] = []
  private var isShutDown = false
  private let path = ChildProcess.find("ip") ?? "/usr/sbin/ip"

  /// Removes stale namespaces, then makes the bridge's namespace with a bridge `br0` up.
  /// - Throws: ``NetworkLabError`` naming the `ip` command that failed.
  init() throws {
    Self.sweepStale()
    let pid = getpid()
    subnet = Int(pid % 250) + 1
    bridgeNamespace = "\(Self.prefix)\(pid)-bridge"
    try ip(["netns", "add", bridgeNamespace])
    do {
      try ip(["-n", bridgeNamespace, "link", "add", "br0", "type", "bridge"])
      try ip(["-n", bridgeNamespace, "link", "set", "br0", "up"])
    } catch {
      shutdown()
      throw error
    }
  }

  deinit {
    shutdown()
  }

  /// Makes host `name`: its namespace with loopback up and `eth0` on the bridge at the next
  /// free address.
  /// - Throws: ``NetworkLabError`` naming the `ip` command that failed.
  @discardableResult
  func addHost(_ name: String) throws -> Host {
    let index = lock.withLock { hosts.count }
    let host = Host(
      name: name, namespace: "\(Self.prefix)\(getpid())-\(name)", address: "10.200.\(subnet).\(index + 2)",
      bridgePort: "v\(index)")
    try ip(["netns", "add", host.namespace])
    lock.withLock { hosts.append(host) }
    try ip(["-n", host.namespace, "link", "set", "lo", "up"])
    try ip(["-n", bridgeNamespace, "link", "add", host.bridgePort, "type", "veth", "peer", "name", "eth0", "netns", host.namespace])
    try ip(["-n", bridgeNamespace, "link", "set", host.bridgePort, "master", "br0"])
    try ip(["-n", bridgeNamespace, "link", "set", host.bridgePort, "up"])
    try ip(["-n", host.namespace, "address", "add", "\(host.address)/24", "dev", "eth0"])
    try ip(["-n", host.namespace, "link", "set", "eth0", "up"])
    return host
  }

  /// Cuts `host` off: its link to the bridge goes down, so its packets reach nobody and
  /// nobody's reach it (a connection attempt either way waits for its deadline). Processes
  /// inside the host still reach each other at its address.
  func cut(_ host: Host) throws {
    try ip(["-n", bridgeNamespace, "link", "set", host.bridgePort, "down"])
  }

  /// Brings `host`'s link to the bridge up again.
  func heal(_ host: Host) throws {
    try ip(["-n", bridgeNamespace, "link", "set", host.bridgePort, "up"])
  }

  /// The command line that runs `arguments` inside `host`'s network: `ip netns exec NS ...`,
  /// which execs the command in place, so the process id a spawn returns is the command's.
  func command(in host: Host, _ arguments: [String]) -> [String] {
    [path, "netns", "exec", host.namespace] + arguments
  }

  /// Runs `executable` inside `host` to completion (see ``ChildProcess/run(_:_:input:environment:deadline:)``).
  func run(
    in host: Host, _ executable: String, _ arguments: [String], input: String? = nil, deadline: Duration = .seconds(60)
  ) throws -> ChildProcess.Outcome {
    try ChildProcess.run(path, Array(command(in: host, [executable] + arguments).dropFirst()), input: input, deadline: deadline)
  }

  /// Starts `executable` inside `host` alongside the test (see ``ChildProcess/start(_:_:environment:)``).
  func start(in host: Host, _ executable: String, _ arguments: [String]) throws -> ChildProcess {
    try ChildProcess.start(path, Array(command(in: host, [executable] + arguments).dropFirst()))
  }

  /// Runs `body` on a thread of its own that joined `host`'s network namespace, and waits:
  /// every socket `body` opens is `host`'s. (`setns` moves only the calling thread; the
  /// thread ends with `body`, so no other code of this process ever runs in the namespace.)
  func inside<Value: Sendable>(_ host: Host, deadline: Duration = .seconds(60), _ body: @escaping @Sendable () throws -> Value) throws -> Value {
    let file = "/var/run/netns/\(host.namespace)"
    let thread = BackgroundThread { () throws -> Value in
      let descriptor = open(file, O_RDONLY | O_CLOEXEC)
      guard descriptor >= 0 else { throw NetworkLabError.namespace(file, errno: errno) }
      defer { close(descriptor) }
      guard joinNamespace(descriptor, 0x4000_0000) == 0 else { throw NetworkLabError.namespace(file, errno: errno) }  // CLONE_NEWNET
      return try body()
    }
    return try thread.value(deadline: deadline)
  }

  /// Deletes every namespace this lab made (their interfaces go with them). Idempotent.
  func shutdown() {
    let names = lock.withLock { () -> [String] in
      defer { hosts = []; isShutDown = true }
      return isShutDown ? [] : hosts.map(\.namespace) + [bridgeNamespace]
    }
    for name in names { try? ip(["netns", "delete", name]) }
  }

  /// Deletes the lab namespaces of processes that no longer run (`ccslab-PID-...` whose PID
  /// has no `/proc` entry): what a crashed or killed run left.
  static func sweepStale() {
    guard let outcome = try? ChildProcess.run("ip", ["netns", "list"], deadline: .seconds(10)) else { return }
    for line in outcome.standardOutput.split(separator: "\n") {
      let name = String(line.split(separator: " ").first ?? "")
      guard name.hasPrefix(prefix), let pid = Int32(name.dropFirst(prefix.count).prefix { $0.isNumber }) else { continue }
      if kill(pid, 0) != 0 && errno == ESRCH {
        _ = try? ChildProcess.run("ip", ["netns", "delete", name], deadline: .seconds(10))
      }
    }
  }

  /// The lab namespaces that exist now, for tests that check none is left behind.
  static func existingNamespaces(of pid: Int32 = getpid()) -> [String] {
    let outcome = try? ChildProcess.run("ip", ["netns", "list"], deadline: .seconds(10))
    return (outcome?.standardOutput ?? "").split(separator: "\n").map { String($0.split(separator: " ").first ?? "") }
      .filter { $0.hasPrefix("\(prefix)\(pid)-") }
  }

  /// Runs `ip ARGUMENTS`, throwing with its error output when it fails.
  private func ip(_ arguments: [String]) throws {
    let outcome = try ChildProcess.run(path, arguments, deadline: .seconds(20))
    guard outcome.succeeded else {
      throw NetworkLabError.command("ip " + arguments.joined(separator: " "), outcome.standardError)
    }
  }
}

/// Why a lab could not be set up or changed.
enum NetworkLabError: Error, CustomStringConvertible {
  case command(String, String)
  case namespace(String, errno: Int32)

  var description: String {
    switch self {
    case .command(let command, let error): "'\(command)' failed: \(error.trimmingCharacters(in: .whitespacesAndNewlines))"
    case .namespace(let file, let code): "join network namespace '\(file)': \(String(cString: strerror(code))) (errno \(code))"
    }
  }
}

// Glibc's Swift module does not declare setns(2) (it needs _GNU_SOURCE).
@_silgen_name("setns") private func joinNamespace(_ descriptor: Int32, _ type: Int32) -> Int32
