import CCSyncSystem
import CCSyncSystemShims
import Glibc

/// A child process this process started: its id, and the calls that signal it and wait for it.
///
/// Nothing reaps it on its own: wait for it (``waitForExit()``, ``exitStatusIfExited()``), or
/// it stays a zombie until this process exits. `Sendable`: a process id.
package struct Subprocess: Hashable, Sendable {
  /// How a child process ended.
  package enum ExitStatus: Hashable, Sendable {
    /// It exited with `code` (0 to 255).
    case exited(code: Int32)
    /// A signal killed it.
    case signaled(Signal)

    /// The status as a shell reports it: the exit code, or 128 + N when killed by signal N.
    package var shellStatus: Int32 {
      switch self {
      case .exited(let code): code
      case .signaled(let signal): 128 + signal.rawValue
      }
    }

    /// Decodes a `waitpid` status (the `WIFEXITED` family of C macros does not import).
    package init(waitStatus status: Int32) {
      let signal = status & 0x7f
      self = signal == 0 ? .exited(code: (status >> 8) & 0xff) : .signaled(Signal(rawValue: signal))
    }
  }

  /// The process id.
  package let id: Int32

  /// Signals a child gets back at their default action whatever this process does with them
  /// (an ignored signal would otherwise stay ignored across `exec`), except those this
  /// process was itself started with ignored (``Signal/ignoredAtStart``).
  package static let signalsReset: [Signal] = [.interrupt, .terminate, .hangUp, .quit, .brokenPipe, .childStatusChanged]

  /// Starts `arguments[0]` (looked up on `PATH` when it has no slash) with `arguments`.
  ///
  /// The child gets the signals in ``signalsReset`` at their default action (but those ignored
  /// at start) and none blocked. It inherits this process's descriptors 0, 1 and 2 unless replaced; every
  /// descriptor this library opens is close-on-exec, so it gets no other.
  /// - Parameters:
  ///   - environment: variables to set (a value) or remove (`nil`) on top of this process's.
  ///   - standardInput: the file to become the child's descriptor 0.
  ///   - standardOutput: the file to become the child's descriptor 1.
  ///   - standardError: the file to become the child's descriptor 2.
  ///   - newProcessGroup: put the child in a process group of its own, so that
  ///     ``sendToProcessGroup(_:)`` reaches everything it starts.
  ///   - closingInheritedDescriptors: close every descriptor above 2 in the child, including
  ///     those this process did not open close-on-exec (another thread's pipe to its own
  ///     child): for a long-lived server that must not hold another child's pipe open. A
  ///     command the user runs keeps what it inherits (`ccsync lock` passes fd 3 on).
  /// - Throws: `SystemError` with operation `run` and the command as its path: `ENOENT` when
  ///   the command is not found (or `arguments` is empty), `EACCES` when it is not executable.
  /// The corresponding C function is `posix_spawnp`.
  package static func spawn(
    _ arguments: [String], environment: [String: String?] = [:], standardInput: FileDescriptor? = nil,
    standardOutput: FileDescriptor? = nil, standardError: FileDescriptor? = nil, newProcessGroup: Bool = false,
    closingInheritedDescriptors: Bool = false
  ) throws(SystemError) -> Subprocess {
    guard let command = arguments.first else { throw SystemError(code: ENOENT, operation: "run", path: "") }
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for signal in signalsReset where !Signal.ignoredAtStart.contains(signal) { sigaddset(&defaults, signal.rawValue) }
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
    if let standardInput { posix_spawn_file_actions_adddup2(&actions, standardInput.rawValue, 0) }
    if let standardOutput { posix_spawn_file_actions_adddup2(&actions, standardOutput.rawValue, 1) }
    if let standardError { posix_spawn_file_actions_adddup2(&actions, standardError.rawValue, 2) }
    if closingInheritedDescriptors { posix_spawn_file_actions_addclosefrom_np(&actions, 3) }

    let argv = CStringArray(arguments)
    let envp = CStringArray(mergedEnvironment(environment))
    var pid: pid_t = 0
    let result = posix_spawnp(&pid, argv.pointers[0]!, &actions, &attributes, argv.pointers, envp.pointers)
    // The descriptors must stay open until the child has its copies.
    withExtendedLifetime((standardInput, standardOutput, standardError)) {}
    if result != 0 { throw SystemError(code: result, operation: "run", path: command) }
    return Subprocess(id: pid)
  }

  /// Waits for the process to end and reaps it.
  /// - Throws: `SystemError` (`ECHILD` when it is not this process's child, or was reaped).
  /// The corresponding C function is `waitpid`.
  package func waitForExit() throws(SystemError) -> ExitStatus {
    var status: Int32 = 0
    _ = try systemCall("wait for process \(id)") { waitpid(id, &status, 0) }
    return ExitStatus(waitStatus: status)
  }

  /// How the process ended, reaping it, or `nil` while it runs. Never blocks.
  /// - Throws: `SystemError` (`ECHILD` when it is not this process's child, or was reaped).
  /// The corresponding C function is `waitpid` with `WNOHANG`.
  package func exitStatusIfExited() throws(SystemError) -> ExitStatus? {
    var status: Int32 = 0
    let result = try systemCall("wait for process \(id)") { waitpid(id, &status, WNOHANG) }
    return result == id ? ExitStatus(waitStatus: status) : nil
  }

  /// Sends `signal` to the process.
  /// - Throws: `SystemError` (`ESRCH` when it is gone and reaped, `EPERM`).
  /// The corresponding C function is `kill`.
  package func send(_ signal: Signal) throws(SystemError) {
    _ = try systemCall("send signal \(signal.rawValue) to process \(id)") { kill(id, signal.rawValue) }
  }

  /// Sends `signal` to every process left in process group `group` (a stopped command's,
  /// after its leader exited); `false` when none is left.
  /// The corresponding C function is `kill` with `-group`.
  @discardableResult
  package static func signalProcessGroup(_ group: Int32, _ signal: Signal) -> Bool {
    kill(-group, signal.rawValue) == 0
  }

  /// Whether any process is left in process group `group` (signal 0 checks without sending).
  package static func processGroupIsAlive(_ group: Int32) -> Bool {
    kill(-group, 0) == 0
  }

  /// Sends `signal` to the process group the process leads (see `newProcessGroup`), and to
  /// the process itself should it have left the group.
  /// - Throws: `SystemError` when neither could be signalled (`ESRCH`: all gone).
  /// The corresponding C function is `kill`.
  package func sendToProcessGroup(_ signal: Signal) throws(SystemError) {
    let groupError: SystemError?
    do {
      _ = try systemCall("send signal \(signal.rawValue) to process group \(id)") { kill(-id, signal.rawValue) }
      groupError = nil
    } catch {
      groupError = error
    }
    do {
      try send(signal)
    } catch {
      if let groupError { throw groupError }
    }
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
}

/// A `NULL`-terminated array of C strings that frees itself.
private final class CStringArray {
  let pointers: [UnsafeMutablePointer<CChar>?]

  init(_ strings: [String]) {
    pointers = strings.map { strdup($0) } + [nil]
  }

  deinit {
    for pointer in pointers { free(pointer) }
  }
}
