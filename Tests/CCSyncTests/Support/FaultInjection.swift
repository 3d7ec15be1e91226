import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// The tools the fault suite drives, each skipping the test with a clear message when it is
/// missing or not permitted here. `scripts/test` installs strace and util-linux.
enum FaultTools {
  /// The path of `strace`, or the test is skipped.
  static func strace() throws -> String {
    guard let path = ChildProcess.find("strace") else {
      try Test.cancel("strace is not installed (scripts/test installs it; apt-get install strace)")
    }
    return path
  }

  /// Skips the test unless it runs as root (mounts, chown to another user, chattr).
  static func requireRoot(_ why: String) throws {
    guard geteuid() == 0 else { try Test.cancel("needs root: \(why)") }
  }

  /// The path of a util-linux (or other) tool, or the test is skipped.
  static func tool(_ name: String) throws -> String {
    guard let path = ChildProcess.find(name) else { try Test.cancel("\(name) is not installed (util-linux)") }
    return path
  }

  /// How many of something a test does by default, unless the environment variable `name`
  /// asks for another number (the suite's knobs: `CCSYNC_FAULT_KILLS`, `CCSYNC_FAULT_SECONDS`).
  static func count(_ name: String, default value: Int) -> Int {
    ProcessInfo.processInfo.environment[name].flatMap { Int($0) }.map { max(1, $0) } ?? value
  }

  /// Prints one measured figure as `fault-figure NAME VALUE`, for RELIABILITY.md.
  static func report(_ name: String, _ value: CustomStringConvertible) {
    print("fault-figure \(name) \(value)")
  }
}

/// What one helper run under strace left behind.
struct TracedRun {
  var helper: ChildProcess.Outcome
  var strace: ChildProcess.Outcome
  /// strace's `-o` output when asked for, else empty.
  var trace: String

  /// Whether the helper was killed by `SIGKILL` (an injected crash).
  var killed: Bool { helper.signaled && helper.status == SIGKILL }
  /// Whether the helper printed that its save returned success.
  var reportedSuccess: Bool { helper.standardOutput.split(separator: "\n").contains { $0 == "saved" || $0.hasPrefix("updated ") } }
  /// The helper's `failed ...` line, if any.
  var failure: String? { helper.standardOutput.split(separator: "\n").first { $0.hasPrefix("failed ") }.map(String.init) }
}

/// Runs the test helper with `arguments`, attaches `strace -f -p` to it once it is ready (so
/// the counts in `when=N` start with the helper's own work, not with the Swift runtime's
/// start-up), lets it go, and waits for both. `straceArguments` are the `-e` options.
/// - Parameters:
///   - keepTrace: record strace's output (`-o FILE`) and return it.
///   - whileRunning: called once the helper was let go, before waiting for it, with the helper.
func runHelperTraced(
  _ arguments: [String], strace straceArguments: [String], keepTrace: Bool = false,
  whileRunning: (ChildProcess) throws -> Void = { _ in }
) throws -> TracedRun {
  let strace = try FaultTools.strace()
  return try withTemporaryDirectory { control in
    let go = control.file("go")
    let traceFile = keepTrace ? control.file("trace") : "/dev/null"
    let helper = try ChildProcess.start(testHelper(), arguments + ["--go", go])
    guard waitUntil(deadline: .seconds(20), { helper.standardOutput.contains("ready") || !helper.isRunning }),
          helper.isRunning else {
      let outcome = helper.stop()
      throw FaultError.helperDidNotStart(outcome.standardOutput + outcome.standardError)
    }
    let tracer = try ChildProcess.start(
      strace, ["-f", "-o", traceFile, "-p", String(helper.process.processIdentifier)] + straceArguments)
    guard waitUntil(deadline: .seconds(20), { tracer.standardError.contains("attached") || !tracer.isRunning }),
          tracer.isRunning else {
      helper.stop()
      let outcome = tracer.wait()
      if outcome.standardError.contains("Operation not permitted") {
        try Test.cancel("strace may not attach here (ptrace not permitted): \(outcome.standardError)")
      }
      throw FaultError.straceFailed(outcome.standardError)
    }
    _ = FileManager.default.createFile(atPath: go, contents: nil)
    do {
      try whileRunning(helper)
    } catch {
      helper.stop()
      tracer.stop()
      throw error
    }
    let helperOutcome = helper.wait(deadline: .seconds(30))
    let straceOutcome = tracer.wait(deadline: .seconds(10))
    let trace = keepTrace ? ((try? String(contentsOfFile: traceFile, encoding: .utf8)) ?? "") : ""
    return TracedRun(helper: helperOutcome, strace: straceOutcome, trace: trace)
  }
}

enum FaultError: Error, CustomStringConvertible {
  case helperDidNotStart(String)
  case straceFailed(String)

  var description: String {
    switch self {
    case .helperDidNotStart(let output): return "the test helper did not start: \(output)"
    case .straceFailed(let output): return "strace failed: \(output)"
    }
  }
}

/// Whether nobody holds the lock of the data file at `path`: `flock -n PATH.lock true`
/// succeeds (util-linux), or, without flock(1), a non-blocking lock in this process.
func lockIsFree(_ path: String) throws -> Bool {
  if ChildProcess.find("flock") != nil {
    return try ChildProcess.run("flock", ["-n", path + ".lock", "true"]).succeeded
  }
  return (try? SharedFile(path: path).withLock(wait: .nonBlocking) {}) != nil
}

/// The names in `directory` that are temp files of `name` (`.NAME.tmp-*`).
func temporaryFiles(of name: String, in directory: TemporaryDirectory) throws -> [String] {
  try directory.names().filter { $0.hasPrefix("." + name + ".tmp-") }
}

/// Sets a file's access and modification times `seconds` into the past (without following
/// a symlink), as if it had been left there that long ago.
func backdate(_ path: String, by seconds: Int) {
  var now = timespec()
  clock_gettime(CLOCK_REALTIME, &now)
  let then = timespec(tv_sec: now.tv_sec - seconds, tv_nsec: 0)
  var times = [then, then]
  _ = utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW)
}

/// Mounts a tmpfs of `size` (e.g. `64k`) on `directory`, or skips the test when mounting is
/// not permitted here. Unmount with ``unmount(_:)``.
func mountTemporaryFileSystem(on directory: String, size: String) throws {
  try FaultTools.requireRoot("mount -t tmpfs")
  let outcome = try ChildProcess.run(try FaultTools.tool("mount"), ["-t", "tmpfs", "-o", "size=\(size),mode=0755", "tmpfs", directory])
  guard outcome.succeeded else { try Test.cancel("mount is not permitted here: \(outcome.standardError)") }
}

/// Unmounts `directory` (lazily, so that a test that failed with files open still cleans up).
func unmount(_ directory: String) {
  _ = try? ChildProcess.run("umount", ["-l", directory])
}

/// Runs `body` with the path of a tmpfs of `size` mounted in a fresh temporary directory, or
/// skips the test when mounting is not permitted here; unmounts it and removes the directory
/// when `body` returns or throws.
@discardableResult
func withTemporaryFileSystem<Value>(size: String, _ body: (String) throws -> Value) throws -> Value {
  try withTemporaryDirectory { directory in
    let mount = directory.file("small")
    try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: false)
    try mountTemporaryFileSystem(on: mount, size: size)
    defer { unmount(mount) }
    return try body(mount)
  }
}

/// Runs `executable` as user and group 65534 (nobody) with `setpriv`; cancels the test when
/// this process cannot switch users or that user cannot run the executable.
func runAsNobody(_ executable: String, _ arguments: [String], input: String? = nil) throws -> ChildProcess.Outcome {
  try FaultTools.requireRoot("setpriv to another user")
  let setpriv = try FaultTools.tool("setpriv")
  let outcome = try ChildProcess.run(
    setpriv, ["--reuid=65534", "--regid=65534", "--clear-groups", executable] + arguments, input: input)
  if outcome.status == 126 || outcome.status == 127 {
    try Test.cancel("user 65534 cannot run \(executable) here: \(outcome.standardError)")
  }
  return outcome
}
