import CCSync
import CCSyncProcesses

/// `ccsync lock [-s | -x] [-n] [-w SECS] [-E CODE] FILE -- CMD ARGS...`: run a command while
/// holding the file's lock, the same `flock` on `FILE.lock` every writer takes.
///
/// The lock descriptor is close-on-exec and the command is started with `posix_spawn` while
/// this process holds the lock and waits, so the lock is released when the command exits,
/// even if it left children behind (like `flock -o`).
enum LockCommand {
  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let spec = Help.lock
    if arguments.has("shared") && arguments.has("exclusive") {
      throw UsageError(message: "The options '--shared' and '--exclusive' cannot be combined", command: spec)
    }
    guard let command = arguments.command, !command.isEmpty else {
      throw UsageError(message: "Missing expected argument '<command>' (give it after '--')", command: spec)
    }
    let conflictCode = try arguments.integer("conflict-exit-code", in: spec, range: 0...255).map(Int32.init) ?? ExitCode.failure
    let wait = try LockWait(arguments, spec: spec)
    let ttl = try arguments.integer("ttl", in: spec, range: 1...Int(Int32.max))
    switch try arguments.address(in: spec) {
    case .file:
      if ttl != nil {
        throw UsageError(message: "The option '--ttl' is for etcd:// locks, which are kept by a lease; a file's lock lasts as long as the command", command: spec)
      }
    case .etcd(let location):
      if arguments.has("shared") {
        throw UsageError(message: "The option '--shared' is for files: etcd's lock (the v3lock service) is exclusive only", command: spec)
      }
      return try EtcdLockCommand.run(
        location: location, command: command, wait: wait, ttl: ttl.map(Int64.init) ?? EtcdLockCommand.defaultTTL,
        conflictCode: conflictCode)
    }
    let path = arguments.operands[0]
    let file = SharedFile(path: path)
    let directory = FilePath.directory(of: try file.resolvedPath())
    guard FileTree.isDirectory(directory) else { throw StoreError.missingDirectory(path: directory) }

    do {
      return try file.withLock(exclusive: !arguments.has("shared"), wait: wait) {
        try runWhileHolding(command)
      }
    } catch StoreError.lockUnavailable(let lockPath) {
      throw CommandFailure(conflictCode, "'\(path)' is locked by another process (lock file '\(lockPath)')")
    }
  }

  /// Starts `command`, passes SIGTERM and SIGHUP on to it (SIGINT from a terminal reaches it
  /// directly, being sent to the whole foreground process group), and returns its status.
  private static func runWhileHolding(_ command: [String]) throws -> Int32 {
    let signals = try SignalPipe.install([.terminate, .hangUp, .childStatusChanged])
    try Signal.interrupt.ignore()
    try Signal.quit.ignore()
    let child: Subprocess
    do {
      child = try Subprocess.start(command)
    } catch {
      throw CommandFailure(error.exitCode, error.description)
    }
    while true {
      if let status = child.statusIfExited() { return status }
      // SIGCHLD wakes the wait; the timeout is a safety net should one be missed.
      _ = waitForInput([signals], timeout: .seconds(1))
      for signal in signals.drain() where signal != .childStatusChanged {
        try? child.send(signal)
      }
    }
  }
}
