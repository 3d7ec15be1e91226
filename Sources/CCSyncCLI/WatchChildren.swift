import CCSync
import CCSyncProcesses

/// The command `ccsync watch --exec` or `--restart` runs: at most one at a time, in a process
/// group of its own so that stopping it stops everything it started.
///
/// It gets the value as one compact JSON line on standard input and in `CCSYNC_VALUE` (unset
/// while there is no value), and the file in `CCSYNC_FILE`.
final class WatchChildren {
  enum Mode {
    /// Run after each printed value; values printed while it runs coalesce into one more run.
    case exec
    /// Run at once; on each new value stop it (SIGTERM, SIGKILL after 5 s) and start it again.
    case restart
  }

  /// How long a stopped command has between SIGTERM and SIGKILL.
  static let killDelay = 5.0

  let mode: Mode
  let command: [String]
  let file: String
  private var child: Subprocess?
  private var latest: JSONValue?
  /// exec: a value arrived while the command ran. restart: start again once it has stopped.
  private var pending = false
  /// Set once SIGTERM was sent: the exit that follows is ours, not the command's own.
  private var stopRequested = false
  private var killDeadline: Double?
  /// The process groups of stopped commands whose leader has exited while other members
  /// (ignoring SIGTERM) may remain, each with the moment they get SIGKILL.
  private var lingeringGroups: [(group: Int32, killAt: Double)] = []
  /// restart: the status of a command that exited on its own, which ends the watch.
  private(set) var exitedOnItsOwn: Int32?
  /// The status to end with when the command could not be started (126 or 127).
  private(set) var spawnFailure: Int32?
  /// Whether the command was started at least once.
  private(set) var hasStarted = false

  init(mode: Mode, command: [String], file: String) {
    self.mode = mode
    self.command = command
    self.file = file
  }

  /// Whether no command runs and none is due.
  var isIdle: Bool { child == nil && !pending }

  /// When ``tick(now:)`` must next run (the SIGKILL of a command that ignores SIGTERM).
  var nextDeadline: Double? { ([killDeadline].compactMap { $0 } + lingeringGroups.map(\.killAt)).min() }

  /// Linux's limit on one environment string (128 KiB, `MAX_ARG_STRLEN`) less the name and the
  /// terminating NUL: a `CCSYNC_VALUE` must be shorter than this to be passed in the
  /// environment; a value this long or longer goes on standard input only.
  static let largestEnvironmentValue = 128 * 1024 - "CCSYNC_VALUE=".utf8.count - 1

  /// Starts the command with `value`; returns a status to end with if it cannot be started.
  @discardableResult
  func start(with value: JSONValue?) -> Int32? {
    latest = value
    hasStarted = true
    var environment: [String: String?] = ["CCSYNC_FILE": file, "CCSYNC_VALUE": nil]
    var input: FileDescriptor?
    do {
      if let value {
        let text = value.formatted(.compact)
        // Linux refuses to start a program with one environment string over 128 KiB
        // (MAX_ARG_STRLEN, E2BIG); a larger value goes on standard input only.
        if text.utf8.count < WatchChildren.largestEnvironmentValue { environment["CCSYNC_VALUE"] = text }
        input = try FileDescriptor.temporaryFile(containing: Array((text + "\n").utf8))
      }
    } catch {
      StandardStreams.writeLine("ccsync: \(error)", toStandardError: true)
    }
    // Never ccsync's own standard input, even when the value's file could not be made.
    if input == nil { input = try? FileDescriptor.openForReading("/dev/null") }
    do {
      child = try Subprocess.start(command, environment: environment, standardInput: input, newProcessGroup: true)
      stopRequested = false
      return nil
    } catch {
      StandardStreams.writeLine("ccsync: \(error)", toStandardError: true)
      spawnFailure = error.exitCode
      return error.exitCode
    }
  }

  /// A new value was printed.
  func valuePrinted(_ value: JSONValue) {
    latest = value
    switch mode {
    case .exec:
      if child == nil { start(with: value) } else { pending = true }
    case .restart:
      guard let child else {
        // Not started yet: this is the first value. (Once started, a command that is gone
        // has exited on its own, which ends the watch.)
        if !hasStarted { start(with: value) }
        return
      }
      pending = true
      if !stopRequested { stop(child) }
    }
  }

  private func stop(_ child: Subprocess) {
    stopRequested = true
    try? child.sendToProcessGroup(.terminate)
    killDeadline = MonotonicClock.now() + WatchChildren.killDelay
  }

  /// Collects the command if it has exited, and starts the next run that is due.
  func reap() {
    guard let current = child, let status = current.statusIfExited() else { return }
    child = nil
    if stopRequested, let killDeadline, Subprocess.processGroupIsAlive(current.id) {
      // What it started may still run, ignoring the SIGTERM: it gets SIGKILL when the
      // leader would have.
      lingeringGroups.append((current.id, killDeadline))
    }
    killDeadline = nil
    switch mode {
    case .exec:
      if status != 0 {
        StandardStreams.writeLine("ccsync: '\(command[0])' exited with status \(status)", toStandardError: true)
      }
      if pending {
        pending = false
        start(with: latest)
      }
    case .restart:
      if stopRequested && pending {
        pending = false
        start(with: latest)
      } else if !stopRequested {
        exitedOnItsOwn = status
      }
    }
  }

  /// Sends SIGKILL to a stopped command whose grace period has passed.
  func tick(now: Double) {
    if let killDeadline, now >= killDeadline, let child {
      try? child.sendToProcessGroup(.kill)
      self.killDeadline = nil
    }
    lingeringGroups.removeAll { lingering in
      guard now >= lingering.killAt else { return false }
      Subprocess.signalProcessGroup(lingering.group, .kill)
      return true
    }
  }

  /// Stops the command, if one runs, and waits for it and what it started (SIGKILL after
  /// 5 s); no further runs. What earlier stopped commands left running gets SIGKILL at once.
  func shutDown() {
    pending = false
    for lingering in lingeringGroups { Subprocess.signalProcessGroup(lingering.group, .kill) }
    lingeringGroups = []
    guard let current = child else { return }
    try? current.sendToProcessGroup(.terminate)
    let deadline = MonotonicClock.now() + WatchChildren.killDelay
    while current.statusIfExited() == nil || Subprocess.processGroupIsAlive(current.id) {
      if MonotonicClock.now() >= deadline {
        Subprocess.signalProcessGroup(current.id, .kill)
        if current.statusIfExited() == nil { _ = current.waitForStatus() }
        break
      }
      MonotonicClock.sleep(seconds: 0.01)
    }
    child = nil
  }
}
