import Foundation
import Testing
@testable import CCSync
import CCSyncJSON

/// `ccsync mirror`'s command line and start-up where no cluster is needed: usage errors, a
/// missing directory, a second mirror of one file, and a mirror that starts while the
/// cluster cannot be reached (a port nothing listens on).
@Suite struct MirrorCommandLineTests {
  @Test func operandsNotInPairsAndABadPreferenceAreUsageErrors() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("cfg.json")
      expectUsageError(try CLI.run(["mirror", file]), command: "mirror", token: "<key>")
      expectUsageError(try CLI.run(["mirror", file, "etcd:///a", file]), command: "mirror", token: "<key>")
      expectUsageError(try CLI.run(["mirror", file, "http://127.0.0.1:2379/a"]), command: "mirror", token: "http://127.0.0.1:2379/a")
      expectUsageError(try CLI.run(["mirror", "--prefer", "both", file, "etcd:///a"]), command: "mirror", token: "both")
      expectUsageError(try CLI.run(["mirror", file, "etcd:///a", file, "etcd:///b"]), command: "mirror", token: file)
      #expect(try directory.names().isEmpty, "nothing made")
    }
  }

  @Test func aMissingDirectoryIsRefusedAtStart() throws {
    try withTemporaryDirectory { directory in
      let outcome = try CLI.run(["mirror", directory.file("absent/cfg.json"), "etcd://127.0.0.1:\(try EtcdCluster.freePort())/cfg"])
      #expect(outcome.status == 66, "\(outcome.summary)")
      #expect(outcome.standardError.contains("no such directory"), "\(outcome.summary)")
    }
  }

  /// The file never depends on the cluster: with none answering, the mirror still starts,
  /// says so once, signals readiness after its first try, and keeps the local edits; a second
  /// mirror of the same file (however it is named, through a symlink too) is refused with 1.
  @Test func withoutTheClusterAMirrorStartsSaysSoOnceAndRefusesASecond() throws {
    try withTemporaryDirectory { directory in
      let file = directory.file("cfg.json")
      try CLI.write(#"{"v": 1}"# + "\n", to: file)
      let url = "etcd://127.0.0.1:\(try EtcdCluster.freePort())/cfg"
      let mirror = try MirrorProcess([file, url], in: directory)
      defer { mirror.terminate() }
      #expect(mirror.waitUntilReady(), "ready after the first try: \(mirror.standardError)")
      #expect(mirror.errorLines(containing: "cannot be reached").count == 1, "\(mirror.standardError)")
      #expect(try CLI.run(["set", file, "v", "2"]).succeeded)

      try FileManager.default.createSymbolicLink(atPath: directory.file("link.json"), withDestinationPath: "cfg.json")
      for spelling in [file, directory.path + "/./cfg.json", directory.file("link.json")] {
        let second = try CLI.run(["mirror", spelling, url], deadline: .seconds(10))
        #expect(second.status == 1, "\(second.summary)")
        #expect(second.standardError.contains("already mirrored"), "\(second.summary)")
      }
      let outcome = mirror.terminate()
      #expect(outcome.succeeded, "\(outcome.summary)")
      #expect(CLI.lines(outcome.standardError).filter { $0.contains("cannot be reached") }.count == 1, "said once: \(outcome.standardError)")
      #expect(fileValue(file) == ["v": 2], "the local edit kept")
    }
  }

  /// SIGINT and SIGHUP end a mirror with 0, as SIGTERM does.
  @Test func interruptAndHangUpEndAMirrorWithZero() throws {
    try withTemporaryDirectory { directory in
      let url = "etcd://127.0.0.1:\(try EtcdCluster.freePort())/cfg"
      for (name, signal) in [("int", SIGINT), ("hup", SIGHUP)] {
        let mirror = try MirrorProcess([directory.file("\(name).json"), url], in: directory)
        defer { mirror.kill() }
        #expect(mirror.waitUntilReady(), "\(mirror.standardError)")
        let outcome = mirror.terminate(signal: signal)
        #expect(outcome.succeeded, "SIG\(name.uppercased()): \(outcome.summary)")
      }
    }
  }
}
