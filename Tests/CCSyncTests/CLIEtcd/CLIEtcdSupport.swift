import Foundation
import Testing
@testable import CCSyncEtcd

/// The built `ccsync` on etcd keys (`etcd://HOST:PORT,.../KEY`), against real members the
/// tests start (``EtcdCluster``), with etcdctl as the foreign writer, reader and lock holder.
/// One test at a time, as the other etcd suites: each starts its own member, and the timing
/// checks (a deadline, a lost lease) would otherwise measure the machine.
@Suite(.serialized, .enabled(if: EtcdCluster.isInstalled, EtcdCluster.absentMessage))
struct CLIEtcdTests {}

extension EtcdCluster {
  /// `etcd://HOST:PORT[,...]/KEY` naming this cluster's members.
  func url(_ key: String) -> String {
    "etcd://" + endpoints.joined(separator: ",") + "/" + key
  }

  /// What etcdctl reads at `key`: the value, or `nil` when there is no such key.
  /// - Parameter user: `user:password` when authentication is on.
  func value(_ key: String, user: String? = nil) throws -> String? {
    let outcome = try etcdctl((user.map { ["--user=\($0)"] } ?? []) + ["get", "--print-value-only", key])
    #expect(outcome.status == 0, "etcdctl get: \(outcome.summary)")
    guard !outcome.standardOutput.isEmpty else { return nil }
    return String(outcome.standardOutput.dropLast())  // etcdctl ends the value with a newline
  }

  /// Puts `value` at `key` with etcdctl, expecting success.
  func put(_ key: String, _ value: String, user: String? = nil) throws {
    let outcome = try etcdctl((user.map { ["--user=\($0)"] } ?? []) + ["put", key, value])
    #expect(outcome.status == 0, "etcdctl put: \(outcome.summary)")
  }

  /// The keys under `prefix`, in order. Read with the client in this process rather than
  /// etcdctl: tests poll it, and a process per look would load a busy machine further.
  func keys(prefix: String) throws -> [String] {
    try client().range(.prefix(Array(prefix.utf8))).keyValues.map { String(decoding: $0.key, as: UTF8.self) }
  }

  /// The leases granted and not yet ended, in etcdctl's hex.
  func leases() throws -> [String] {
    let outcome = try etcdctl(["lease", "list"])
    return CLI.lines(outcome.standardOutput).filter { !$0.isEmpty && !$0.hasPrefix("found ") }
  }

  /// Starts `etcdctl ARGUMENTS` against this cluster alongside the test (a lock holder).
  func startEtcdctl(_ arguments: [String]) throws -> ChildProcess {
    try ChildProcess.start(
      EtcdInstallation.chosen.etcdctl ?? "etcdctl", ["--endpoints=\(endpoints.joined(separator: ","))"] + arguments,
      environment: CLI.environment(["ETCDCTL_API": "3"]))
  }
}

/// Runs `body` with a one-member cluster (started with `flags`) and a temporary directory,
/// both removed afterwards, whatever `body` does.
func withEtcd(flags: [String] = [], _ body: (EtcdCluster, TemporaryDirectory) throws -> Void) throws {
  let cluster = try EtcdCluster(flags: flags)
  defer { cluster.shutdown() }
  try withTemporaryDirectory { directory in try body(cluster, directory) }
}

/// The seconds `body` took, and what it returned.
func timed<Result>(_ body: () throws -> Result) rethrows -> (result: Result, seconds: Double) {
  let clock = ContinuousClock()
  let start = clock.now
  let result = try body()
  let elapsed = (clock.now - start).components
  return (result, Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18)
}

/// ``withEtcd(flags:_:)`` with authentication on: `root:secret`, and a user `app` (password
/// `right`) who may read and write the keys under `cfg/` through the role `app-role`.
func withAuthenticatedEtcd(_ body: (EtcdCluster, TemporaryDirectory) throws -> Void) throws {
  try withEtcd { cluster, directory in
    let root = "--user=root:secret"
    for arguments in [
      ["user", "add", "root:secret"], ["user", "add", "app:right"], ["role", "add", "app-role"],
      ["role", "grant-permission", "app-role", "--prefix=true", "readwrite", "cfg/"], ["user", "grant-role", "app", "app-role"],
    ] {
      let outcome = try cluster.etcdctl(arguments)
      #expect(outcome.status == 0, "etcdctl \(arguments): \(outcome.summary)")
    }
    let enable = try cluster.etcdctl([root, "auth", "enable"])
    #expect(enable.status == 0, "\(enable.summary)")
    try body(cluster, directory)
  }
}
