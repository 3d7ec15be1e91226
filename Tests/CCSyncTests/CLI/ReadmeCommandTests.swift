import Foundation
import Testing

/// The README's shell examples run as written: every `ccsync` line of its ```sh blocks is run
/// (the built `ccsync` first on `PATH`, in a temporary directory holding `config.json`, a copy
/// of Config/example.json, and the scripts the examples call), or named in ``skipped`` with
/// the reason, so that nothing is left out silently and no example drifts from the command.
/// A line whose comment is a value (`# 8080`) must print that value.
@Suite(.serialized) struct ReadmeCommandTests {
  /// A `ccsync` line of the README: the command as written, and its comment.
  struct Example: CustomStringConvertible {
    var command: String
    var comment: String?
    /// Whether it names a key (`etcd://`), run against a member the test starts.
    var isCluster: Bool { command.contains("etcd://") }
    var description: String { command }
  }

  /// The lines that cannot run on their own, and why; each must still be in the README.
  static let skipped: [String: String] = [
    "swift run ccsync demo": "the tour; CLIEditStressDemoTests.demoRunsOnItsOwnAndEndsWithTheStressResult runs it",
    "swift run ccsync demo cluster": "starts three members of its own; DemoClusterTests run it",
    "ccsync watch config.json server --exec -- ./reload.sh": "runs until stopped (no --count)",
    "ccsync edit config.json": "interactive: opens $EDITOR",
    "ccsync mirror /etc/app/config.json etcd:///cfg/app": "runs until stopped; the Mirror suites run it",
    "ccsync mirror /etc/app/config.json etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379/cfg/app":
      "runs until stopped, on a three-machine cluster; the Mirror suites run it",
  ]

  /// Every line of a ```sh block of README.md that runs `ccsync` (directly or through
  /// `swift run`), in order.
  static func examples() throws -> [Example] {
    let readme = try String(contentsOf: packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
    var examples: [Example] = []
    var inShell = false
    for line in readme.components(separatedBy: "\n") {
      if line.hasPrefix("```") {
        inShell = !inShell && line == "```sh"
        continue
      }
      guard inShell else { continue }
      var command = line
      var comment: String?
      if let mark = line.range(of: " # ") {
        command = String(line[..<mark.lowerBound])
        comment = line[mark.upperBound...].trimmingCharacters(in: .whitespaces)
      }
      command = command.trimmingCharacters(in: .whitespaces)
      guard command.hasPrefix("ccsync ") || command.hasPrefix("swift run ccsync ") else { continue }
      examples.append(Example(command: command, comment: comment))
    }
    return examples
  }

  @Test func everyExampleIsRunOrSkippedByName() throws {
    let commands = try Self.examples().map(\.command)
    #expect(commands.count >= 8, "found only \(commands)")
    for skip in Self.skipped.keys { #expect(commands.contains(skip), "skipped but not in README.md: \(skip)") }
    #expect(commands.filter { !$0.contains("etcd://") && Self.skipped[$0] == nil }.count >= 3, "\(commands)")
  }

  @Test func theFileExamplesRunAsWritten() throws {
    try withTemporaryDirectory { directory in
      try run(try Self.examples().filter { !$0.isCluster }, in: directory, environment: [:])
    }
  }

  @Test(.enabled(if: EtcdCluster.isInstalled, EtcdCluster.absentMessage))
  func theClusterExamplesRunAsWrittenAgainstAMember() throws {
    try withEtcd { cluster, directory in
      let endpoint = cluster.endpoints[0]
      let examples = try Self.examples().filter(\.isCluster).map { example in
        var example = example
        example.command = example.command.replacingOccurrences(of: "127.0.0.1:2379", with: endpoint)
        return example
      }
      try run(examples, in: directory, environment: ["ETCDCTL_ENDPOINTS": endpoint])
      #expect(try cluster.value("cfg/app") == "{\n  \"server\": {\n    \"port\": 9090\n  }\n}\n")
    }
  }

  /// Runs each example not skipped with `sh -c` in `directory`, seeded with `config.json` and
  /// the scripts the examples name, and checks it exits 0 (and prints the value its comment
  /// shows, if any).
  private func run(_ examples: [Example], in directory: TemporaryDirectory, environment: [String: String]) throws {
    try FileManager.default.copyItem(atPath: CLI.exampleURL.path, toPath: directory.file("config.json"))
    for script in ["reload.sh", "migrate.sh"] {
      try CLI.write("#!/bin/sh\nexit 0\n", to: directory.file(script))
      chmod(directory.file(script), 0o755)
    }
    let binaries = URL(fileURLWithPath: try CLI.executable()).deletingLastPathComponent().path
    // The etcd under test (CCSYNC_ETCD) before the one on PATH, for the examples' etcdctl.
    let path = binaries + ":" + (EtcdInstallation.chosen.environment()["PATH"] ?? "/usr/bin:/bin")
    var ran = 0
    for example in examples where Self.skipped[example.command] == nil {
      let command = example.command.hasPrefix("swift run ") ? String(example.command.dropFirst("swift run ".count)) : example.command
      let outcome = try ChildProcess.run(
        "/bin/sh", ["-c", "cd '\(directory.path)' && \(command)"],
        environment: CLI.environment(environment.merging(["PATH": path]) { $1 }), deadline: .seconds(30))
      #expect(outcome.status == 0 && !outcome.signaled, "\(example): \(outcome.summary)")
      if let comment = example.comment, (try? JSONSerialization.jsonObject(with: Data(comment.utf8), options: .fragmentsAllowed)) != nil {
        #expect(outcome.standardOutput == comment + "\n", "\(example): \(outcome.summary)")
      }
      ran += 1
    }
    #expect(ran > 0, "no example ran")
  }
}
