import Foundation
import Testing

/// A mount of `scripts/powercut-fs` (a FUSE file system that keeps what a disk would not yet
/// hold, and drops it on command) over a backing directory, both in a fresh temporary
/// directory. The test kills every process that uses the mount before each ``cut(_:)``:
/// power loss kills everything. Unmounted and removed when released.
///
/// Skips the test (`Test.cancel`) with the reason when it cannot mount: not root, no
/// `/dev/fuse`, fusepy or libfuse2 missing (`scripts/test` installs `fuse` and
/// `python3-fusepy`), or a mount the kernel refuses.
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

  init() throws {
    try FaultTools.requireRoot("mounting a FUSE file system")
    guard FileManager.default.fileExists(atPath: "/dev/fuse") else {
      try Test.cancel("/dev/fuse is missing: FUSE cannot mount here")
    }
    let python = "/usr/bin/python3"
    guard FileManager.default.isExecutableFile(atPath: python),
          (try? ChildProcess.run(python, ["-c", "import ctypes.util, sys; import fusepy; sys.exit(ctypes.util.find_library('fuse') is None)"]))?.succeeded == true
    else {
      try Test.cancel("fusepy over libfuse2 is not installed for /usr/bin/python3 (scripts/test installs fuse and python3-fusepy)")
    }
    directory = try TemporaryDirectory()
    let backing = directory.file("backing")
    path = directory.file("mount")
    try FileManager.default.createDirectory(atPath: backing, withIntermediateDirectories: false)
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    let script = packageRoot.appendingPathComponent("scripts/powercut-fs").path
    daemon = try InteractiveChild(python, [script, backing, path])
    guard waitUntil(deadline: .seconds(20), { daemon.hasLine(startingWith: "ready") || daemon.hasLine(startingWith: "failed") || !daemon.process.isRunning }),
          daemon.hasLine(startingWith: "ready") else {
      let reason = (daemon.receivedLines + [daemon.standardError]).joined(separator: " ")
      if daemon.process.isRunning { kill(daemon.process.processIdentifier, SIGKILL) }
      _ = daemon.waitForEnd()
      directory.remove()
      try Test.cancel("scripts/powercut-fs could not mount: \(reason)")
    }
    _ = daemon.nextLine(startingWith: "ready")
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
