import CCSync
import Glibc

/// Thin wrappers over the process system calls the CLI needs and the library does not wrap:
/// `posix_spawnp`, `waitpid`, `kill`, `poll`, pipes and signal handlers. Only the main thread
/// spawns, so a descriptor made close-on-exec right after `pipe` cannot leak into a child.
enum ProcessControl {
  /// Why a command could not be started.
  struct SpawnError: Error, CustomStringConvertible {
    var command: String
    var code: Int32

    var description: String {
      "cannot run '\(command)': \(String(cString: strerror(code)))"
    }

    /// 127 for a command not found, 126 otherwise, as shells report.
    var exitCode: Int32 {
      code == ENOENT || code == ENOTDIR ? ExitCode.commandNotFound : ExitCode.commandNotExecutable
    }
  }

  /// Signals a child gets back to their default action whatever this process does with them.
  private static let resetSignals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD]

  /// Starts `arguments[0]` (looked up on `PATH` when it has no slash) with `arguments`.
  ///
  /// The child gets every signal at its default action and none blocked. It inherits this
  /// process's descriptors 0, 1, 2 unless replaced; every other descriptor of this process is
  /// close-on-exec, the lock's included.
  /// - Parameters:
  ///   - environment: variables to set (a value) or remove (`nil`) on top of this process's.
  ///   - standardInput: a descriptor to become the child's descriptor 0.
  ///   - standardOutput: a descriptor to become the child's descriptor 1.
  ///   - standardError: a descriptor to become the child's descriptor 2.
  ///   - newProcessGroup: put the child in a process group of its own, so that
  ///     ``signalGroup(_:_:)`` reaches everything it starts.
  static func spawn(
    _ arguments: [String], environment: [String: String?] = [:], standardInput: Int32? = nil,
    standardOutput: Int32? = nil, standardError: Int32? = nil, newProcessGroup: Bool = false
  ) throws(SpawnError) -> pid_t {
    guard !arguments.isEmpty else { throw SpawnError(command: "", code: ENOENT) }
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for signal in resetSignals { sigaddset(&defaults, signal) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    var mask = sigset_t()
    sigemptyset(&mask)
    posix_spawnattr_setsigmask(&attributes, &mask)
    var flags = Int32(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)
    if newProcessGroup {
      flags |= Int32(POSIX_SPAWN_SETPGROUP)
      posix_spawnattr_setpgroup(&attributes, 0)
    }
    posix_spawnattr_setflags(&attributes, Int16(flags))

    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    if let standardInput { posix_spawn_file_actions_adddup2(&actions, standardInput, 0) }
    if let standardOutput { posix_spawn_file_actions_adddup2(&actions, standardOutput, 1) }
    if let standardError { posix_spawn_file_actions_adddup2(&actions, standardError, 2) }

    let argv = CStringArray(arguments)
    let envp = CStringArray(mergedEnvironment(environment))
    var pid: pid_t = 0
    let result = posix_spawnp(&pid, argv.pointers[0]!, &actions, &attributes, argv.pointers, envp.pointers)
    if result != 0 { throw SpawnError(command: arguments.first ?? "", code: result) }
    return pid
  }

  /// This process's environment with `changes` applied, as `NAME=value` strings.
  private static func mergedEnvironment(_ changes: [String: String?]) -> [String] {
    var result: [String] = []
    var entry = environ
    while let pointer = entry.pointee {
      let text = String(cString: pointer)
      let name = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? text
      if changes[name] == nil { result.append(text) }
      entry += 1
    }
    for (name, value) in changes.sorted(by: { $0.key < $1.key }) {
      if let value { result.append("\(name)=\(value)") }
    }
    return result
  }

  /// Waits for `pid` to exit and returns its status as a shell reports it (128+N when killed
  /// by signal N). Retries on `EINTR`.
  static func waitForExit(_ pid: pid_t) -> Int32 {
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 {
      if errno != EINTR { return ExitCode.ioError }
    }
    return exitCode(waitStatus: status)
  }

  /// The status of `pid` if it has exited (reaping it), or `nil` while it runs.
  static func exitCodeIfExited(_ pid: pid_t) -> Int32? {
    var status: Int32 = 0
    while true {
      let result = waitpid(pid, &status, WNOHANG)
      if result == pid { return exitCode(waitStatus: status) }
      if result == -1 && errno == EINTR { continue }
      if result == -1 { return ExitCode.ioError }  // not our child any more
      return nil
    }
  }

  /// The `WEXITSTATUS`, or 128 + `WTERMSIG`, of a `waitpid` status (the C macros do not import).
  static func exitCode(waitStatus status: Int32) -> Int32 {
    let signal = status & 0x7f
    return signal == 0 ? (status >> 8) & 0xff : 128 + signal
  }

  /// Sends `signal` to `pid`. The corresponding C function is `kill`.
  static func signal(_ pid: pid_t, _ signal: Int32) {
    kill(pid, signal)
  }

  /// Sends `signal` to the process group `pid` leads, and to `pid` itself should it have left it.
  static func signalGroup(_ pid: pid_t, _ signal: Int32) {
    kill(-pid, signal)
    kill(pid, signal)
  }

  /// A pipe whose ends are close-on-exec; the read end is non-blocking when asked.
  static func makePipe(nonBlockingRead: Bool = false, nonBlockingWrite: Bool = false) -> (read: Int32, write: Int32) {
    var ends: [Int32] = [0, 0]
    guard pipe(&ends) == 0 else { fatalError("pipe: \(String(cString: strerror(errno)))") }
    for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    if nonBlockingRead { _ = fcntl(ends[0], F_SETFL, fcntl(ends[0], F_GETFL) | O_NONBLOCK) }
    if nonBlockingWrite { _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK) }
    return (ends[0], ends[1])
  }

  /// A descriptor reading `bytes` from the start: an unlinked temporary file, so a command
  /// that never reads its input cannot block the writer (a pipe could).
  static func inputFile(_ bytes: [UInt8]) throws(SystemError) -> Int32 {
    let directory = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    var template = Array((directory + "/ccsync-input-XXXXXX").utf8CString)
    let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
    guard descriptor >= 0 else { throw SystemError(code: errno, operation: "create temporary file", path: directory) }
    template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
    _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
    defer { lseek(descriptor, 0, SEEK_SET) }
    do {
      try writeAll(bytes, to: descriptor)
    } catch {
      close(descriptor)
      throw error
    }
    return descriptor
  }

  /// Writes every byte to `descriptor`, retrying short writes and `EINTR`.
  static func writeAll(_ bytes: [UInt8], to descriptor: Int32) throws(SystemError) {
    var offset = 0
    while offset < bytes.count {
      let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
      if written < 0 {
        if errno == EINTR { continue }
        throw SystemError(code: errno, operation: "write", path: nil)
      }
      offset += written
    }
  }

  /// Waits until one of `descriptors` is readable or `timeout` seconds pass (`nil`: no limit).
  /// - Returns: which descriptors are readable (or hung up).
  static func waitForInput(_ descriptors: [Int32], timeout: Double?) -> [Bool] {
    var entries = descriptors.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
    let milliseconds: Int32 = timeout.map { Int32(min(max(($0 * 1000).rounded(.up), 0), 3_600_000)) } ?? -1
    let result = poll(&entries, nfds_t(entries.count), milliseconds)
    if result <= 0 { return descriptors.map { _ in false } }
    return entries.map { $0.revents != 0 }
  }

  /// Seconds on a monotonic clock.
  static func now() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
  }

  /// The path of this executable, for starting copies of itself.
  static let executablePath = "/proc/self/exe"
}

/// A `NULL`-terminated array of C strings that frees itself.
final class CStringArray {
  let pointers: [UnsafeMutablePointer<CChar>?]

  init(_ strings: [String]) {
    pointers = strings.map { strdup($0) } + [nil]
  }

  deinit {
    for pointer in pointers { free(pointer) }
  }
}

/// Write end of the self-pipe the signal handlers write to; set once, before any handler is
/// installed (a signal handler can read nothing safer than a global).
nonisolated(unsafe) private var signalPipeWriteEnd: Int32 = -1
nonisolated(unsafe) private var signalPipeReadEnd: Int32 = -1

/// Signals turned into bytes on a pipe, so a `poll` loop can wait for them together with
/// other events. The handlers only `write` (async-signal-safe).
enum SignalPipe {
  /// Installs handlers for `signals` and unblocks them (a parent may have started this process
  /// with them blocked: test runners and some supervisors do); returns the read end to poll.
  static func install(_ signals: [Int32]) -> Int32 {
    if signalPipeWriteEnd == -1 {
      let ends = ProcessControl.makePipe(nonBlockingRead: true, nonBlockingWrite: true)
      signalPipeReadEnd = ends.read
      signalPipeWriteEnd = ends.write
    }
    for signal in signals {
      var action = sigaction()
      action.__sigaction_handler.sa_handler = { number in
        let saved = errno
        var byte = UInt8(truncatingIfNeeded: number)
        _ = Glibc.write(signalPipeWriteEnd, &byte, 1)
        errno = saved
      }
      sigemptyset(&action.sa_mask)
      action.sa_flags = SA_RESTART | (signal == SIGCHLD ? SA_NOCLDSTOP : 0)
      sigaction(signal, &action, nil)
    }
    var unblocked = sigset_t()
    sigemptyset(&unblocked)
    for signal in signals { sigaddset(&unblocked, signal) }
    pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
    return signalPipeReadEnd
  }

  /// The signals that arrived since the last call, in order.
  static func drain() -> [Int32] {
    var result: [Int32] = []
    var buffer = [UInt8](repeating: 0, count: 64)
    while true {
      let count = buffer.withUnsafeMutableBytes { Glibc.read(signalPipeReadEnd, $0.baseAddress, $0.count) }
      if count <= 0 { return result }
      result += buffer[..<count].map { Int32($0) }
    }
  }

  /// Ignores `signals` in this process (children still get them at their default action).
  static func ignore(_ signals: [Int32]) {
    for signal in signals { Glibc.signal(signal, SIG_IGN) }
  }
}
