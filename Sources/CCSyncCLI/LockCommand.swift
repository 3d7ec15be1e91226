import CCSync
import CCSyncProcesses

/// `ccsync lock [-s | -x] [-n] [-w SECS] [-E CODE] FILE -- CMD ARGS...`: run a command while
/// holding the file's lock, the same `flock` on `FILE.lock` every writer takes.
///
/// The lock descriptor is close-on-exec and the command is started with `posix_spawn` while
/// this process holds the lock and waits, so the lock is released when the command exits,
/// even if it left children behind (like `flock -o`).
enum LockCommand: Command {
  static let shared = OptionSpec("s", "shared", help: "Take the shared lock (readers that must see one consistent version; files only).")
  static let exclusive = OptionSpec("x", "exclusive", help: "Take the exclusive lock (the default; what every writer takes).")
  static let conflictExitCode = OptionSpec("E", "conflict-exit-code", value: "code", .integer(0...255), help: "Exit with <code> instead of 1 when the lock is not taken.")
  static let ttl = OptionSpec(nil, "ttl", value: "secs", .integer(1...Int(Int32.max)), help: "etcd:// only: the time to live of the lock's lease (default 10).")

  static let spec = CommandSpec(
    name: "lock", overview: "Run a command while holding a JSON file's lock.",
    operands: [OperandSpec("file", kind: .document, help: "The JSON file, or etcd://[HOST:PORT[,HOST:PORT...]]/NAME for etcd's lock NAME.")],
    options: [shared, exclusive] + Help.lockOptions + [conflictExitCode, ttl],
    exclusive: [[shared, exclusive]],
    discussion: """
      The lock is flock(2) on '<file>.lock' beside the resolved file, the lock every ccsync writer and the library take, so 'flock <file>.lock ...' interoperates. It is not inherited: it is released when <command> exits, even if <command> left children running. Exits with <command>'s status (128+N when killed by signal N), 126 or 127 when it cannot be run. SIGTERM and SIGHUP are passed on to it; SIGINT from the terminal reaches it directly.
      With etcd://.../NAME it is etcd's lock NAME (the one 'etcdctl lock NAME' takes), held with a lease renewed every third of --ttl while <command> runs. <command> gets CCSYNC_LOCK_REVISION, a fencing token that grows with every grant. If the lease is lost (revoked, or expired while the cluster could not be reached), <command> is stopped (SIGTERM, SIGKILL after 5 s) and the status is 75.
      """,
    takesCommand: true, requiresCommand: true, commandStartsAfterOperands: 1)

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let command = arguments.command ?? []
    let conflictCode = arguments.integer(conflictExitCode).map(Int32.init) ?? ExitCode.failure
    let wait = ContentionWait(arguments)
    let ttl = arguments.integer(Self.ttl)
    switch try arguments.address() {
    case .file:
      if ttl != nil {
        throw arguments.usageError("The option '--ttl' is for etcd:// locks, which are kept by a lease; a file's lock lasts as long as the command")
      }
    case .etcd(let location):
      if arguments.has(shared) {
        throw arguments.usageError("The option '--shared' is for files: etcd's lock (the v3lock service) is exclusive only")
      }
      return try EtcdLockCommand.run(
        location: location, command: command, wait: wait, ttl: ttl.map(Int64.init) ?? EtcdLocker.defaultTTL,
        conflictCode: conflictCode)
    }
    let path = arguments.operands[0]
    let file = SharedFile(path: path)
    let directory = FilePath.directory(of: try file.resolvedPath())
    guard FileTree.isDirectory(directory) else { throw StoreError.missingDirectory(path: directory) }

    let lock: FileDocumentLock
    do {
      lock = try file.lock(exclusive: !arguments.has(shared), wait: wait)
    } catch {
      if case .lockUnavailable(let lockPath) = error { throw wait.failure(file: path, lockPath: lockPath, code: conflictCode) }
      throw error
    }
    defer { lock.release() }
    return try runWhileHolding(command)
  }

  /// Starts `command`, passes SIGTERM and SIGHUP on to it (SIGINT from a terminal reaches it
  /// directly, being sent to the whole foreground process group), and returns its status.
  private static func runWhileHolding(_ command: [String]) throws -> Int32 {
    let signals = try SignalPipe.install([.terminate, .hangUp, .childStatusChanged])
    try Signal.interrupt.ignore()
    try Signal.quit.ignore()
    let child = ChildSupervisor(command: command)
    try child.startReportingFailure()
    return child.runToEnd(signals: signals)
  }
}
