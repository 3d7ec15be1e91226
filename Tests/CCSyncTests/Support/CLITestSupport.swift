import Foundation
import Testing

/// Running the built `ccsync` for the CLI tests, and checking what it left behind.
enum CLI {
  /// The built `ccsync` executable.
  static func executable() throws -> String {
    try ChildProcess.builtExecutable("ccsync")
  }

  /// Runs `ccsync ARGUMENTS` to completion (killed after `deadline`).
  static func run(
    _ arguments: [String], input: String? = nil, environment: [String: String]? = nil,
    deadline: Duration = .seconds(30)
  ) throws -> ChildProcess.Outcome {
    try ChildProcess.run(executable(), arguments, input: input, environment: environment, deadline: deadline)
  }

  /// Starts `ccsync ARGUMENTS` alongside the test.
  static func start(_ arguments: [String], environment: [String: String]? = nil) throws -> ChildProcess {
    try ChildProcess.start(executable(), arguments, environment: environment)
  }

  /// Runs `ccsync ARGUMENTS` as user and group `nobody` (65534) through setpriv, so that file
  /// permissions apply (the tests run as root, which bypasses them).
  static func runAsNobody(_ arguments: [String], input: String? = nil) throws -> ChildProcess.Outcome {
    try CCSyncTests.runAsNobody(executable(), arguments, input: input)
  }

  /// This environment with `changes` applied.
  static func environment(_ changes: [String: String]) -> [String: String] {
    ProcessInfo.processInfo.environment.merging(changes) { _, new in new }
  }

  /// The bytes of the file at `path`, or `nil` when it cannot be read.
  static func bytes(_ path: String) -> Data? {
    FileManager.default.contents(atPath: path)
  }

  /// Writes `text` to `path`.
  static func write(_ text: String, to path: String) throws {
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
  }

  /// The lines of `text`, without the empty one after the final newline.
  static func lines(_ text: String) -> [String] {
    var lines = text.components(separatedBy: "\n")
    if lines.last == "" { lines.removeLast() }
    return lines
  }

  /// The example document, Config/example.json, read from the package.
  static let exampleURL = packageRoot.appendingPathComponent("Config/example.json")
}

extension ChildProcess.Outcome {
  /// A one-line summary for failed expectations.
  var summary: String {
    "status \(status)\(signaled ? " (signal)" : "")\(timedOut ? " (timed out)" : ""); stdout: \(standardOutput.debugDescription); stderr: \(standardError.debugDescription)"
  }
}

/// A usage error as swift-argument-parser prints it: the message, a `Usage:` line and the
/// pointer to the command's help.
func expectUsageError(
  _ outcome: ChildProcess.Outcome, command: String, token: String,
  sourceLocation: SourceLocation = #_sourceLocation
) {
  #expect(outcome.status == 64, "\(outcome.summary)", sourceLocation: sourceLocation)
  #expect(outcome.standardOutput == "", sourceLocation: sourceLocation)
  let lines = CLI.lines(outcome.standardError)
  #expect(lines.count == 3, "\(outcome.summary)", sourceLocation: sourceLocation)
  #expect(lines.first?.hasPrefix("Error: ") == true, sourceLocation: sourceLocation)
  #expect(lines.first?.contains("'\(token)'") == true, "\(outcome.summary)", sourceLocation: sourceLocation)
  #expect(lines.dropFirst().first?.hasPrefix("Usage: ccsync \(command)") == true, sourceLocation: sourceLocation)
  #expect(lines.last == "  See 'ccsync \(command) --help' for more information.", sourceLocation: sourceLocation)
}

/// `flock LOCKFILE sleep 30`, holding a lock the way another program would, until ``stop()``.
///
/// flock(1) runs the command in a child; the child's pid is recorded so that stopping kills
/// the `sleep` itself, which ends flock too and releases the lock at once.
final class FlockHolder {
  let child: ChildProcess
  private let pidFile: String

  /// Starts the holder and waits until the lock is taken; it lets go by itself after
  /// `seconds` (`sleep`'s argument: `1.5` is a second and a half).
  init(lockFile: String, in directory: TemporaryDirectory, seconds: String = "30") throws {
    pidFile = directory.file("flock-holder.pid")
    child = try ChildProcess.start("flock", [lockFile, "-c", "echo $$ > '\(pidFile)'; exec sleep \(seconds)"])
    #expect(waitUntil { FileManager.default.fileExists(atPath: self.pidFile) && self.sleepPid != nil })
  }

  /// The process holding the lock (flock's `sleep`), once it holds it.
  var sleepPid: Int32? {
    (try? String(contentsOfFile: pidFile, encoding: .utf8)).flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
  }

  /// Ends the holder and waits for it; the lock is free afterwards.
  func stop() {
    if let pid = sleepPid { kill(pid, SIGKILL) }
    _ = child.stop()
  }

  deinit { stop() }
}

/// The processes waiting for a `flock` (the `->` lines of /proc/locks).
func blockedFlockWaiters() -> [Int32] {
  let table = (try? String(contentsOfFile: "/proc/locks", encoding: .utf8)) ?? ""
  return table.split(separator: "\n").compactMap { line -> Int32? in
    let fields = line.split(separator: " ")
    guard fields.count > 5, fields[1] == "->", fields[2] == "FLOCK" else { return nil }
    return Int32(fields[5])
  }
}
