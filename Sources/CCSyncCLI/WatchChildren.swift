import CCSync
import CCSyncProcesses

/// The command `ccsync watch --exec`, `--restart` or `--signal` runs: at most one at a time,
/// in a process group of its own so that stopping it stops everything it started (a
/// ``ChildSupervisor``, which starts, signals, stops and reaps it).
///
/// It gets the value as one compact JSON line on standard input and in `CCSYNC_VALUE` (unset
/// while there is no value), and the file in `CCSYNC_FILE`.
///
/// With a debounce period (`--debounce SECS`), a new value is acted on once no other has come
/// for SECS, and at the latest 4 x SECS after the first one not acted on yet (consul-template's
/// `wait = "SECS:4xSECS"`): a burst of writes (an editor's, a deploy tool's) makes one run,
/// restart or signal, with its last value, and a value that never stops changing is still acted
/// on. The value found when the watch starts is acted on at once: there is nothing to wait for.
final class WatchChildren {
  enum Mode: Equatable {
    /// Run after each printed value; values printed while it runs coalesce into one more run.
    case exec
    /// Run at once; on each new value stop it (SIGTERM, SIGKILL after 5 s) and start it again.
    case restart
    /// Run at once; on each new value send it this signal (a service's reload), to the
    /// command's process alone, as `systemctl reload` (`kill -HUP $MAINPID`) does: the
    /// processes it started (an nginx's workers) are its to tell.
    case signal(Signal)
  }

  /// How long a stopped command has between SIGTERM and SIGKILL.
  static let killDelay: Duration = .seconds(5)

  let mode: Mode
  let command: [String]
  let file: String
  /// How long the value must stay unchanged before it is acted on; 0 acts at once.
  let debounce: Duration
  /// Runs the command, one at a time.
  private let supervisor: ChildSupervisor
  /// The last value printed.
  private var latest: JSONValue?
  /// The last value acted on: what a coalesced run or a restart starts with. The same as
  /// `latest` but while a newer value waits for its debounce period, which has its own
  /// action to come.
  private var actedOn: JSONValue?
  /// exec: a value arrived while the command ran. restart: start again once it has stopped.
  private var pending = false
  /// restart: the status of a command that exited on its own, which ends the watch.
  private(set) var exitedOnItsOwn: Int32?
  /// The status to end with when the command could not be started (126 or 127).
  private(set) var spawnFailure: Int32?
  /// Whether the command was started at least once.
  private(set) var hasStarted = false
  /// Under a debounce period: when the latest value is to be acted on, and when the first
  /// value not acted on yet came (the 4 x SECS bound runs from there).
  private var actionDue: ContinuousClock.Instant?
  private var firstDeferredAt: ContinuousClock.Instant?

  init(mode: Mode, command: [String], file: String, debounce: Duration = .zero) {
    self.mode = mode
    self.command = command
    self.file = file
    self.debounce = debounce
    supervisor = ChildSupervisor(command: command, ownProcessGroup: true, killDelay: WatchChildren.killDelay)
  }

  /// The longest a value waits under a debounce period when values keep coming, as a
  /// multiple of the period: consul-template's `wait` default (`min:4xmin`).
  static let longestDebounceFactor = 4

  /// Whether the command runs for as long as the watch (``Mode/restart``, ``Mode/signal(_:)``)
  /// rather than once per value.
  var runsContinuously: Bool { mode != .exec }

  /// Whether no command runs and none is due.
  var isIdle: Bool { !supervisor.isRunning && !pending && actionDue == nil }

  /// When ``tick(now:)`` must next run: the SIGKILL of a command that ignores SIGTERM, the
  /// end of a debounce period.
  var nextDeadline: ContinuousClock.Instant? {
    [supervisor.nextDeadline, actionDue].compactMap { $0 }.min()
  }

  /// Linux's limit on one environment string (128 KiB, `MAX_ARG_STRLEN`) less the name and the
  /// terminating NUL: a `CCSYNC_VALUE` must be shorter than this to be passed in the
  /// environment; a value this long or longer goes on standard input only.
  static let largestEnvironmentValue = 128 * 1024 - "CCSYNC_VALUE=".utf8.count - 1

  /// Starts the command with `value`; returns a status to end with if it cannot be started.
  @discardableResult
  func start(with value: JSONValue?) -> Int32? {
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
      try supervisor.start(environment: environment, standardInput: input)
      return nil
    } catch {
      let failure = SpawnError(command: command.first ?? "", error: error)
      StandardStreams.writeLine("ccsync: \(failure)", toStandardError: true)
      spawnFailure = failure.exitCode
      return failure.exitCode
    }
  }

  /// A new value was printed. `initial`: it is the value found when the watch started,
  /// acted on at once whatever the debounce period.
  func valuePrinted(_ value: JSONValue, initial: Bool = false) {
    latest = value
    if debounce == .zero || initial {
      act(on: value)
      return
    }
    let now = ContinuousClock.now
    let first = firstDeferredAt ?? now
    firstDeferredAt = first
    actionDue = min(now + debounce, first + debounce * WatchChildren.longestDebounceFactor)
  }

  /// Acts at once on a value still waiting for its debounce period to end: `--count` was
  /// reached, and the watch reads the file no more, so there is nothing left to wait for.
  func actOnDeferredValue() {
    guard actionDue != nil, let latest else { return }
    actionDue = nil
    firstDeferredAt = nil
    act(on: latest)
  }

  /// Runs, restarts or signals the command for `value`, as the mode says.
  private func act(on value: JSONValue) {
    actedOn = value
    switch mode {
    case .exec:
      if !supervisor.isRunning { start(with: value) } else { pending = true }
    case .restart:
      guard supervisor.isRunning else {
        // Not started yet: this is the first value. (Once started, a command that is gone
        // has exited on its own, which ends the watch.)
        if !hasStarted { start(with: value) }
        return
      }
      pending = true
      supervisor.stop()
    case .signal(let signal):
      guard supervisor.isRunning else {
        if !hasStarted { start(with: value) }
        return
      }
      // A command that has just exited (not reaped yet) is a zombie, which takes the signal
      // and ignores it; its exit ends the watch at the next reap.
      supervisor.reload(with: signal)
    }
  }

  /// Collects the command if it has exited, and starts the next run that is due.
  func reap() {
    let stopRequested = supervisor.stopRequested
    guard let status = supervisor.reap() else { return }
    switch mode {
    case .exec:
      if status != 0 {
        StandardStreams.writeLine("ccsync: '\(command[0])' exited with status \(status)", toStandardError: true)
      }
      if pending {
        pending = false
        start(with: actedOn)
      }
    case .restart:
      if stopRequested && pending {
        pending = false
        start(with: actedOn)
      } else if !stopRequested {
        exitedOnItsOwn = status
      }
    case .signal:
      if !stopRequested { exitedOnItsOwn = status }
    }
  }

  /// Acts on a value whose debounce period has ended, and sends SIGKILL to a stopped
  /// command whose grace period has passed.
  func tick(now: ContinuousClock.Instant) {
    if let actionDue, now >= actionDue { actOnDeferredValue() }
    supervisor.tick(now: now)
  }

  /// Stops the command, if one runs, and waits for it and what it started (SIGKILL after
  /// 5 s); no further runs. What earlier stopped commands left running gets SIGKILL at once.
  func shutDown() {
    pending = false
    actionDue = nil
    supervisor.shutDown()
  }
}
