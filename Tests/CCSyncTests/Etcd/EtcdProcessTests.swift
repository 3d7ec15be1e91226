import Foundation
import Testing
@testable import CCSync
@testable import CCSyncEtcd
import CCSyncSystem

extension EtcdTests {
  /// `CodableStorage` over an etcd key in several processes (the test helper's `increment`
  /// and `session`), against real members that are killed under them.
  @Suite struct Processes {
    /// Four processes doing `update { counter += 1 }` fifty times each end at exactly 200:
    /// every lost compare-and-swap ran the closure again on the newer value.
    @Test func incrementsFromSeveralProcessesAreExact() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let url = etcdURL(cluster, key: "counters/exact")
      let helper = try testHelper()
      let children = try (0..<4).map { _ in try ChildProcess.start(helper, ["increment", url, "50"]) }
      for child in children {
        let outcome = child.wait(deadline: .seconds(60))
        #expect(outcome.succeeded, "\(outcome.standardError)")
      }
      #expect(try counter(in: cluster, key: "counters/exact") == 200)
    }

    /// The issue's scenario: three members on loopback, the leader killed (`SIGKILL`) while
    /// four processes do 100 `update` increments each and two storages watch (one in another
    /// process, one here). Every process lists the leader first, so writes are in flight on
    /// it when it dies: their outcome is unknown, and the store must settle each without
    /// losing or doubling an increment. The count is exact and both watchers end at it.
    ///
    /// Frozen (`SIGSTOP`) instead of killed, the leader keeps the transactions it took; when
    /// it thaws after the others elected a new leader and finished, it may still pass them
    /// on: their compare fails, and the count stays exact as that member sees it too.
    @Test(arguments: ["kill", "freeze"])
    func theLeaderLostDuringIncrementsLosesNoneAndBothWatchersEndAtTheCount(_ fault: String) throws {
      let cluster = try EtcdCluster(members: 3)
      defer { cluster.shutdown() }
      let leader = try cluster.leaderIndex()
      let endpoints = cluster.endpoints(startingWith: leader)
      let key = "counters/leader"
      let url = "etcd://" + endpoints.joined(separator: ",") + "/" + key
      let helper = try testHelper()

      let remote = try InteractiveChild(helper, ["session", url, "manual"])
      #expect(remote.nextLine(startingWith: "ready") != nil, "\(remote.standardError)")
      let local = CodableStorage(
        defaultValue: EtcdSettings(), location: .etcd(EtcdLocation(endpoints: endpoints, key: key)), updateMode: .manual,
        options: quietOptions)
      let probe = ReloadProbe(local)

      let incrementers = try (0..<4).map { _ in try ChildProcess.start(helper, ["increment", url, "100"]) }
      let client = try cluster.client(endpoints: Array(endpoints.dropFirst()))
      #expect(waitUntil(deadline: .seconds(30)) { ((try? counter(client, key: key)) ?? 0) >= 100 }, "the increments started")
      if fault == "kill" { try cluster.kill(leader) } else { try cluster.freeze(leader) }
      for child in incrementers {
        let outcome = child.wait(deadline: .seconds(60))
        #expect(outcome.succeeded, "\(outcome.standardError)")
      }
      #expect(try counter(client, key: key) == 400, "exact across the leader's loss")
      if fault == "freeze" {
        try cluster.thaw(leader)
        let thawed = try cluster.client(endpoints: [endpoints[0]])
        #expect(waitUntil { (try? counter(thawed, key: key)) == 400 }, "the thawed member at \(String(describing: try? counter(thawed, key: key)))")
      }

      #expect(waitUntil(deadline: .seconds(15)) { local.wrappedValue.counter == 400 }, "local watcher at \(local.wrappedValue.counter)")
      #expect(probe.changes.last?.value.counter == 400, "the last change observers heard")
      #expect(probe.errors.isEmpty, "\(probe.errors)")
      var last = ""
      let remoteArrived = waitUntil(deadline: .seconds(15)) {
        last = remote.request("observed", reply: "observed") ?? ""
        return last.contains(#""counter":400"#)
      }
      #expect(remoteArrived, "the other process's observers last heard: \(last)")
      #expect(remote.request("get", reply: "value")?.contains(#""counter":400"#) == true)
      remote.send("exit")
      #expect(remote.finish() == 0)
      #expect(try counter(client, key: key) == 400, "nothing applied late")
    }

    /// A pending edit of an `.afterIdle` storage is written when the process gets `SIGTERM`
    /// (the exit flush), over an etcd key as over a file; the fields another writer set
    /// meanwhile stay.
    @Test func aPendingEditIsWrittenWhenTheProcessIsTerminated() throws {
      let cluster = try EtcdCluster()
      defer { cluster.shutdown() }
      let key = "cfg/exit"
      #expect(try cluster.etcdctl(["put", key, #"{"fontSize": 20, "extra": [1, 2.50]}"#]).succeeded)
      let session = try InteractiveChild(try testHelper(), ["session", etcdURL(cluster, key: key), "idle:60"])
      #expect(session.nextLine(startingWith: "ready")?.contains(#""fontSize":20"#) == true, "\(session.standardError)")
      #expect(session.request("set theme leaving") != nil)
      #expect(session.request("pending", reply: "pending") == "pending true")
      #expect(try cluster.etcdctl(["put", key, #"{"fontSize": 21, "extra": [1, 2.50]}"#]).succeeded)
      let ended = session.terminate(signal: SIGTERM)
      #expect(ended.signaled && ended.status == SIGTERM, "ended by the signal after flushing")
      let stored = try cluster.etcdctl(["get", "--print-value-only", key]).standardOutput
      let value = try JSONValue(parsing: Array(stored.utf8))
      #expect(value.field("theme") == "leaving", "\(stored)")
      #expect(value.field("fontSize") == 21, "the other writer's field kept: \(stored)")
      #expect(stored.contains("2.50"), "a key the type does not know kept with its number text: \(stored)")
    }

    /// With authentication on, a process gets its credentials as etcdctl does
    /// (`ETCDCTL_USER=user:password`) and its endpoints from `ETCDCTL_ENDPOINTS` for an
    /// `etcd:///KEY` URL; without them it reports the refusal and writes nothing.
    @Test func aProcessAuthenticatesWithEtcdctlUser() throws {
      let cluster = try securedEtcdCluster()
      defer { cluster.shutdown() }
      let helper = try testHelper()
      let environment = ["ETCDCTL_ENDPOINTS": cluster.endpoints.joined(separator: ",")]
      let refused = try ChildProcess.run(helper, ["increment", "etcd:///cfg/auth", "1"], environment: merged(environment))
      #expect(!refused.succeeded)
      #expect(refused.standardError.contains("user name is empty"), "\(refused.standardError)")

      var withUser = environment
      withUser["ETCDCTL_USER"] = "root:secret"
      let session = try InteractiveChild(helper, ["session", "etcd:///cfg/auth", "manual"], environment: withUser)
      #expect(session.nextLine(startingWith: "ready") != nil, "\(session.standardError)")
      #expect(session.request("increment", reply: "counted") == "counted 1")
      #expect(session.request("set theme secured") != nil)
      #expect(session.request("save") == "ok")
      let stored = try cluster.etcdctl(["--user", "root:secret", "get", "--print-value-only", "cfg/auth"]).standardOutput
      #expect(stored.contains(#""theme": "secured""#) && stored.contains(#""counter": 1"#), "\(stored)")
      session.send("exit")
      #expect(session.finish() == 0)
    }
  }
}

extension EtcdCluster {
  /// Every member's endpoint, member `first`'s first: a client listing them in this order
  /// talks to that member until it fails.
  func endpoints(startingWith first: Int) -> [String] {
    let all = endpoints
    return [all[first]] + all.indices.filter { $0 != first }.map { all[$0] }
  }
}

/// The settings type of the etcd storage tests (the helper's `HelperSettings`, field for
/// field).
struct EtcdSettings: Codable, Sendable, Equatable {
  var theme = "light"
  var fontSize = 13
  var counter = 0
  var tags: [String] = []
}

/// Options for the test process's etcd storages: watching on, no exit hooks (the test
/// process is shared), no stderr noise.
let quietOptions = StorageOptions(flushesAtExit: false, logger: .silent)

/// `etcd://HOST:PORT,.../KEY` for every member of `cluster`.
func etcdURL(_ cluster: EtcdCluster, key: String) -> String {
  "etcd://" + cluster.endpoints.joined(separator: ",") + "/" + key
}

/// The `counter` member of the document under `key`, read with etcdctl's client.
func counter(in cluster: EtcdCluster, key: String) throws -> Int64? {
  try counter(cluster.client(), key: key)
}

/// The `counter` member of the document under `key`.
func counter(_ client: EtcdClient, key: String) throws -> Int64? {
  guard let stored = try client.get(bytes(key)).keyValue else { return nil }
  return try JSONValue(parsing: stored.value).field("counter")?.numberValue?.int64Value
}

/// This process's environment with `extra` over it.
func merged(_ extra: [String: String]) -> [String: String] {
  ProcessInfo.processInfo.environment.merging(extra) { $1 }
}

/// One member with authentication on: user `root`, password `secret`; simple tokens that
/// expire after `tokenTTL` seconds without use.
func securedEtcdCluster(tokenTTL: Int = 300) throws -> EtcdCluster {
  let cluster = try EtcdCluster(flags: ["--auth-token", "simple", "--auth-token-ttl", String(tokenTTL)])
  for arguments in [["user", "add", "root:secret"], ["auth", "enable"]] {
    let outcome = try cluster.etcdctl(arguments)
    guard outcome.succeeded else {
      cluster.shutdown()
      throw EtcdClusterError.notServing(member: 0, what: "etcdctl \(arguments.joined(separator: " "))", log: outcome.standardError)
    }
  }
  return cluster
}

extension JSONValue {
  /// The member `key` of an object, `nil` for anything else.
  func field(_ key: String) -> JSONValue? {
    guard case .object(let object) = self else { return nil }
    return object[key]
  }
}
