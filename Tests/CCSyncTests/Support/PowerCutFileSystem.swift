import Foundation
import Testing

/// A mount of `scripts/powercut-fs` (a FUSE file system that keeps what a disk would not yet
/// hold, and drops it on command) over a backing directory, both in a fresh temporary
/// directory. Unmounted and removed when released.
///
/// Two ways to cut the power: ``cut(_:)`` at once, after the test killed every process that
/// uses the mount (power loss kills everything); or ``arm(after:_:)``, which cuts just before
/// the Nth change the writers make and fails every operation after it with `EIO` until
/// ``powerOn()``, so that nothing the writers do before the test kills them reaches the
/// post-crash state.
///
/// Skips the test (`Test.cancel`) with the reason when it cannot mount: not root, no
/// `/dev/fuse`, pyfuse3 missing (`scripts/test` installs `python3-pyfuse3`), or a mount the
/// kernel refuses.
///
/// `@unchecked Sendable`: used from the test's thread only; the child's output is locked.
final class PowerCutFileSystem: @unchecked Sendable {
  /// The orders in which a real file system may lose what was not made durable.
  enum Order: String, CaseIterable, Sendable {
    /// Every create and rename kept, data not `fsync`ed lost: the file comes back empty.
    case dataLostEmpty = "data-lost empty"
    /// The same, the lost data coming back as zeros at the file's size (old blocks).
    case dataLostZeros = "data-lost zeros"
    /// Every directory back to its last `fsync`, the data written so far kept.
    case renamesLost = "renames-lost"
  }

  /// The mounted directory.
  let path: String
  private let directory: TemporaryDirectory
  private let daemon: InteractiveChild
  /// How many of the daemon's lines had arrived when the last cut was armed.
  private var armedMark = 0

  /// Mounts a new one, or skips the test saying why it cannot.
  init() throws {
    let python = try Self.requirements()
    directory = try TemporaryDirectory()
    let backing = directory.file("backing")
    path = directory.file("mount")
    try FileManager.default.createDirectory(atPath: backing, withIntermediateDirectories: false)
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    let script = packageRoot.appendingPathComponent("scripts/powercut-fs").path
    daemon = try Self.startDaemon(python, [script, backing, path], cleaningUp: directory)
  }

  /// The Python that runs the file system, or the test is skipped: root (to mount),
  /// `/dev/fuse`, and pyfuse3 (over libfuse3) with trio for `/usr/bin/python3`.
  private static func requirements() throws -> String {
    try FaultTools.requireRoot("mounting a FUSE file system")
    guard FileManager.default.fileExists(atPath: "/dev/fuse") else {
      try Test.cancel("/dev/fuse is missing: FUSE cannot mount here")
    }
    let python = "/usr/bin/python3"
    let check = "import pyfuse3, trio"
    guard FileManager.default.isExecutableFile(atPath: python),
          (try? ChildProcess.run(python, ["-c", check]))?.succeeded == true else {
      try Test.cancel("pyfuse3 is not installed for /usr/bin/python3 (scripts/test installs python3-pyfuse3)")
    }
    return python
  }

  /// Starts the daemon and waits for its `ready`; when it cannot mount, removes `directory`
  /// and skips the test with the daemon's words.
  private static func startDaemon(_ python: String, _ arguments: [String], cleaningUp directory: TemporaryDirectory) throws -> InteractiveChild {
    let daemon = try InteractiveChild(python, arguments)
    waitUntil(deadline: .seconds(20)) {
      daemon.hasLine(startingWith: "ready") || daemon.hasLine(startingWith: "failed") || !daemon.process.isRunning
    }
    guard daemon.nextLine(startingWith: "ready", deadline: .zero) != nil else {
      let reason = (daemon.receivedLines + [daemon.standardError]).joined(separator: " ")
      if daemon.process.isRunning { kill(daemon.process.processIdentifier, SIGKILL) }
      _ = daemon.waitForEnd()
      directory.remove()
      try Test.cancel("scripts/powercut-fs could not mount: \(reason)")
    }
    return daemon
  }

  deinit {
    daemon.send("quit")
    if !daemon.endsOnItsOwn(within: .seconds(10), killingIfNot: daemon.process.processIdentifier) {
      unmount(path)
    }
    directory.remove()
  }

  /// `path/name`.
  func file(_ name: String) -> String { path + "/" + name }

  /// Cuts the power: drops what is not durable in `order`. Every process that used the mount
  /// must be dead (and waited for) first. Returns how many names the cut changed.
  @discardableResult
  func cut(_ order: Order) throws -> Int {
    guard let reply = daemon.request("cut \(order.rawValue)", reply: "cut", deadline: .seconds(30)) else {
      throw PowerCutError.noReply("cut \(order.rawValue)", daemon.receivedLines.suffix(3).joined(separator: " | ") + " " + daemon.standardError)
    }
    return reply.split(separator: " ").first { $0.hasPrefix("changed=") }.flatMap { Int($0.dropFirst("changed=".count)) } ?? 0
  }

  /// Cuts the power (in `order`) just before the `operations`-th operation from now that
  /// changes or syncs something, and keeps it off until ``powerOn()``; see
  /// ``armedCut(deadline:)``.
  func arm(after operations: Int, _ order: Order) throws {
    guard daemon.request("arm \(operations) \(order.rawValue)", reply: "armed", deadline: .seconds(30)) != nil else {
      throw PowerCutError.noReply("arm", daemon.standardError)
    }
    armedMark = daemon.receivedLines.count
  }

  /// Whether the armed cut has happened, waiting up to `deadline` for it.
  func armedCutHappened(within deadline: Duration) -> Bool {
    daemon.waitForLine(after: armedMark, deadline: deadline) { $0.hasPrefix("cut ") }
  }

  /// The armed cut, once it happened: how many names it changed and the operation it came
  /// before. `nil` when it has not happened; then call ``cut(_:)`` (which disarms it).
  func armedCut() -> (changed: Int, operation: String)? {
    guard armedCutHappened(within: .milliseconds(100)), let line = daemon.nextLine(startingWith: "cut ", deadline: .seconds(1)) else {
      return nil
    }
    let words = line.split(separator: " ")
    let changed = words.first { $0.hasPrefix("changed=") }.flatMap { Int($0.dropFirst("changed=".count)) } ?? 0
    let operation = words.first { $0.hasPrefix("at=") }.map { String($0.dropFirst("at=".count)) } ?? "?"
    return (changed, operation)
  }

  /// Turns the power back on after an armed cut (nothing to do otherwise).
  func powerOn() throws {
    guard daemon.request("power-on", reply: "on", deadline: .seconds(30)) != nil else {
      throw PowerCutError.noReply("power-on", daemon.standardError)
    }
  }

  /// Makes everything durable, as `sync(1)` does.
  func sync() throws {
    guard daemon.request("sync", reply: "synced", deadline: .seconds(30)) != nil else {
      throw PowerCutError.noReply("sync", daemon.standardError)
    }
  }

  /// The daemon's counts: `fsync`s, directory `fsync`s and cuts.
  func statistics() -> String {
    daemon.request("stats", reply: "stats") ?? "stats unavailable"
  }
}

enum PowerCutError: Error, CustomStringConvertible {
  case noReply(String, String)

  var description: String {
    switch self {
    case .noReply(let command, let output): return "scripts/powercut-fs did not answer '\(command)': \(output)"
    }
  }
}
