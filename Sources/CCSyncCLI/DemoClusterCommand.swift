import CCSync
import CCSyncEtcd
import CCSyncProcesses

/// `ccsync demo cluster`: three etcd members on loopback and three "machines" (temporary
/// directories), each with its own mirror, watcher and writer; the writers change different
/// fields of one document at the same moment, every machine's file converges, the leader is
/// killed and writes still reach every machine. Everything it starts, it stops. Every value
/// shown is what a file held or a process printed.
enum DemoClusterCommand {
  /// Each machine's writer and the field it sets, all at the same moment.
  static let writers: [(path: String, value: String)] = [
    ("server.port", "9090"),
    ("server.host", "10.0.0.7"),
    ("server.tls.enabled", "true"),
  ]

  static func run() throws -> Int32 {
    guard let etcd = ThisProcess.executablePath(named: "etcd") else {
      DemoOutput.say("ccsync demo cluster needs etcd (3.4 or later) on PATH, and it is not there.")
      DemoOutput.say("Install it, then run the demo again:")
      DemoOutput.say("  Debian, Ubuntu:  sudo apt-get install etcd-server")
      DemoOutput.say("  elsewhere:       https://etcd.io/docs/latest/install/")
      return ExitCode.unavailable
    }
    let start = ContinuousClock.now
    let directory = try DemoDirectory()
    defer { directory.remove() }
    let cluster = try DemoCluster(etcd: etcd, directory: directory.path)
    defer { cluster.stop() }

    DemoOutput.say("ccsync demo cluster: three machines sharing one document through etcd")
    DemoOutput.say("")
    DemoOutput.say("Three etcd members on loopback (\(cluster.endpoints.joined(separator: ", "))), ready in \(DemoOutput.milliseconds(cluster.startupTime)).")
    let url = "etcd://" + cluster.endpoints.joined(separator: ",") + "/demo/config"
    let machines = try (1...3).map { number in try DemoMachine(number: number, root: directory.path, url: url) }
    defer { for machine in machines { machine.stop() } }
    try SharedFile(path: machines[0].file).replaceContents(with: Array(DemoDocument.text.utf8))
    DemoOutput.say("Three machines, each a directory with config.json, a mirror, a watcher and (below) a writer:")
    DemoOutput.say("  $ ccsync mirror machineN/config.json \(url)")
    DemoOutput.say("  $ ccsync watch machineN/config.json server")
    DemoOutput.say("machine1 starts with the example config; machines 2 and 3 start with none.")

    var ok = try partStart(machines)
    ok = try partWriters(machines) && ok
    ok = try partLeaderKilled(machines, cluster: cluster) && ok

    DemoOutput.say("")
    DemoOutput.say("Stopping the mirrors, the watchers and the members; removing the directories.")
    for machine in machines { machine.stop() }
    cluster.stop()
    DemoOutput.say("Done in \(decimal(seconds(ContinuousClock.now - start), places: 1)) s.")
    return ok ? ExitCode.success : ExitCode.failure
  }

  // MARK: Parts

  private static func partStart(_ machines: [DemoMachine]) throws -> Bool {
    DemoOutput.heading("1. The mirrors start: machine1's file goes to the key, and from there to the others")
    for machine in machines { try machine.startMirror() }
    let expected = try DocumentReader.read(machines[0].file)
    let converged = DemoProcess.waitUntil(timeout: .seconds(10)) { machines.allSatisfy { (try? DocumentReader.read($0.file)) == expected } }
    for machine in machines { try machine.startWatcher() }
    for machine in machines {
      let lines = (try? DocumentReader.read(machine.file)).map { "\($0.formatted(.compact).count) bytes of JSON" } ?? "no file"
      DemoOutput.say("  \(machine.name)/config.json: \(lines)")
    }
    DemoOutput.say(converged ? "  all three files hold the same document." : "  NOT CONVERGED within 10 s.")
    return converged
  }

  private static func partWriters(_ machines: [DemoMachine]) throws -> Bool {
    DemoOutput.heading("2. Three writers, one per machine, change different fields at the same moment")
    let started = try zip(machines, writers).map { machine, writer in
      try DemoProcess.start(["set", machine.file, writer.path, writer.value])
    }
    let writeStart = started.map(\.startTime).min() ?? ContinuousClock.now
    for ((machine, writer), process) in zip(zip(machines, writers), started) {
      let outcome = process.wait()
      DemoOutput.say("  \(machine.name): $ ccsync set config.json \(writer.path) \(writer.value)   exit \(outcome.status)")
    }
    return try showConvergence(machines, expecting: writers, since: writeStart)
  }

  private static func partLeaderKilled(_ machines: [DemoMachine], cluster: DemoCluster) throws -> Bool {
    DemoOutput.heading("3. The leader is killed; the two members left carry on")
    guard let leader = cluster.killLeader() else {
      DemoOutput.say("  no member said it was the leader")
      return false
    }
    DemoOutput.say("  killed \(leader) with SIGKILL")
    let change = ("server.timeouts.read", "45")
    let writeStart = ContinuousClock.now
    let outcome = try DemoProcess.run(["set", machines[2].file, change.0, change.1])
    DemoOutput.say("  \(machines[2].name): $ ccsync set config.json \(change.0) \(change.1)   exit \(outcome.status)")
    return try showConvergence(machines, expecting: [change], since: writeStart)
  }

  /// Waits until every machine's file holds every change of `expecting`, then says when each
  /// did and what its watcher printed.
  private static func showConvergence(
    _ machines: [DemoMachine], expecting changes: [(path: String, value: String)], since writeStart: ContinuousClock.Instant
  ) throws -> Bool {
    var arrivals: [ContinuousClock.Instant?] = machines.map { _ in nil }
    let deadline = ContinuousClock.now + .seconds(10)
    while arrivals.contains(where: { $0 == nil }) && ContinuousClock.now < deadline {
      for (index, machine) in machines.enumerated() where arrivals[index] == nil {
        if machine.holds(changes) { arrivals[index] = ContinuousClock.now }
      }
      ContinuousClock.sleepThread(for: .milliseconds(5))
    }
    var ok = true
    for (machine, arrival) in zip(machines, arrivals) {
      machine.watcher?.waitFor(timeout: .milliseconds(500)) { _ in false }
      let last = machine.watcher?.lines.last?.text ?? "(nothing)"
      if let arrival {
        DemoOutput.say("  \(machine.name): every change in its file \(DemoOutput.milliseconds(arrival - writeStart)) after the writes; its watcher's last line:")
        DemoOutput.say("    \(last)")
      } else {
        ok = false
        DemoOutput.say("  \(machine.name): MISSING a change after 10 s")
      }
    }
    if ok { DemoOutput.say("  no machine lost another's field.") }
    return ok
  }
}

/// One "machine" of the cluster demo: a directory with config.json, its mirror and its
/// watcher.
final class DemoMachine {
  let name: String
  let file: String
  let url: String
  private(set) var mirror: Subprocess?
  private(set) var watcher: DemoWatcher?

  init(number: Int, root: String, url: String) throws {
    name = "machine\(number)"
    let directory = root + "/" + name
    try FileSystem.makeDirectory(directory, mode: 0o755)
    file = directory + "/config.json"
    self.url = url
  }

  /// Starts the mirror; its diagnostics go to the demo's standard error.
  func startMirror() throws {
    do {
      // Three "machines" on one host: each reports its status under its own name.
      mirror = try Subprocess.start([ThisProcess.executablePath, "mirror", "--host-name", name, file, url])
    } catch {
      throw CommandFailure(error.exitCode, error.description)
    }
  }

  /// Starts the watcher, once the file exists.
  func startWatcher() throws {
    watcher = try DemoWatcher(["watch", file, "server"])
  }

  /// Whether the file holds every `path = value` of `changes`.
  func holds(_ changes: [(path: String, value: String)]) -> Bool {
    guard let document = try? DocumentReader.read(file) else { return false }
    return changes.allSatisfy { change in
      let expected = (try? JSONValue(parsing: Array(change.value.utf8))) ?? .string(change.value)
      return (try? document.value(at: JSONPath(parsing: change.path))) == expected
    }
  }

  /// Stops the watcher and the mirror (SIGTERM), once.
  func stop() {
    _ = watcher?.stop()
    watcher = nil
    if let mirror {
      try? mirror.send(.terminate)
      _ = mirror.waitForStatus()
    }
    mirror = nil
  }
}

/// The cluster demo's three etcd members, started on free loopback ports and stopped by the
/// PIDs it started.
final class DemoCluster {
  private var members: [(name: String, endpoint: String, process: Subprocess?)] = []
  private(set) var startupTime: Duration = .zero

  var endpoints: [String] { members.map(\.endpoint) }

  init(etcd: String, directory: String) throws {
    let started = ContinuousClock.now
    let ports = try LoopbackPorts.free(6)
    let names = ["etcd1", "etcd2", "etcd3"]
    let initialCluster = names.enumerated().map { "\($1)=http://127.0.0.1:\(ports[2 * $0 + 1])" }.joined(separator: ",")
    do {
      for (index, name) in names.enumerated() {
        let client = "http://127.0.0.1:\(ports[2 * index])"
        let peer = "http://127.0.0.1:\(ports[2 * index + 1])"
        let log = try FileDescriptor.createNew(directory + "/\(name).log", permissions: 0o600)
        let process = try Subprocess.start(
          [etcd, "--name", name, "--data-dir", directory + "/\(name).data",
           "--listen-client-urls", client, "--advertise-client-urls", client,
           "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
           "--initial-cluster", initialCluster, "--initial-cluster-state", "new",
           "--heartbeat-interval", "10", "--election-timeout", "100"],
          standardOutput: log, standardError: log, closingInheritedDescriptors: true)
        members.append((name, "127.0.0.1:\(ports[2 * index])", process))
      }
      try waitUntilServing()
    } catch {
      stop()
      throw error
    }
    startupTime = ContinuousClock.now - started
  }

  /// Waits until a read through the gateway answers on every member.
  private func waitUntilServing() throws {
    let deadline = ContinuousClock.now + .seconds(15)
    for member in members {
      let client = try? EtcdClient(EtcdClient.Configuration(endpoints: [member.endpoint], deadline: .seconds(1), attemptTimeout: .milliseconds(500)))
      while (try? client?.get(Array("demo/ready".utf8))) == nil {
        if ContinuousClock.now >= deadline {
          throw CommandFailure(ExitCode.unavailable, "the demo's etcd member \(member.name) did not start within 15 s")
        }
        ContinuousClock.sleepThread(for: .milliseconds(20))
      }
    }
  }

  /// Kills the leader with SIGKILL; returns its description, or `nil` when none was found.
  func killLeader() -> String? {
    guard let client = try? EtcdClient(endpoints: endpoints) else { return nil }
    for (index, member) in members.enumerated() {
      guard let endpoint = try? HTTPEndpoint(parsing: member.endpoint),
        let status = try? client.status(of: endpoint), status.isLeader, let process = member.process
      else { continue }
      try? process.send(.kill)
      _ = process.waitForStatus()
      members[index].process = nil
      return "\(member.name), the leader (pid \(process.id))"
    }
    return nil
  }

  /// Stops every member still running (SIGTERM) and waits for it; idempotent.
  func stop() {
    for index in members.indices {
      guard let process = members[index].process else { continue }
      try? process.send(.terminate)
      _ = process.waitForStatus()
      members[index].process = nil
    }
  }
}
