import CCSyncSystem

/// Runs one command at a time for a command of ours (`lock`, `lock` over etcd, `watch
/// --exec/--restart/--signal`): starts it, passes signals on to it, sends it a reload signal,
/// stops it (SIGTERM, then SIGKILL after a grace period) and reports how it ended, as
/// consul-template's `child` package does for its commands.
///
/// In a process group of its own (``ownProcessGroup``), stopping the command stops what it
/// started too: the group gets the signals, and members that outlive the leader (ignoring
/// SIGTERM) get SIGKILL when the leader would have. A reload signal and signals passed on go
/// to the command's process alone, as `systemctl reload` (`kill -HUP $MAINPID`) does: the
/// processes it started are its to tell.
///
/// Driven from one thread (the command's event loop): call ``reap()`` when SIGCHLD arrives
/// and ``tick(now:)`` by ``nextDeadline``. Not `Sendable`.
package final class ChildSupervisor {
  /// The status of a command that could not be waited for (not our child any more): EX_IOERR.
  package static let unknownStatus: Int32 = 74

  /// The command and its arguments.
  package let command: [String]
  /// Whether the command runs in a process group of its own.
  package let ownProcessGroup: Bool
  /// How long a stopped command has between SIGTERM and SIGKILL.
  package let killDelay: Duration
  /// The command while it runs (not reaped yet).
  package private(set) var child: Subprocess?
  /// Set once the command was told to stop: its exit that follows is ours, not its own.
  package private(set) var stopRequested = false
  private var killDeadline: ContinuousClock.Instant?
  /// The process groups of stopped commands whose leader has exited while other members
  /// (ignoring SIGTERM) may remain, each with the moment they get SIGKILL.
  private var lingeringGroups: [(group: Int32, killAt: ContinuousClock.Instant)] = []

  /// A supervisor for `command`, not started yet.
  package init(command: [String], ownProcessGroup: Bool = false, killDelay: Duration = .seconds(5)) {
    self.command = command
    self.ownProcessGroup = ownProcessGroup
    self.killDelay = killDelay
  }

  /// Whether the command runs (started and not reaped).
  package var isRunning: Bool { child != nil }

  /// When ``tick(now:)`` must next run: the SIGKILL of a stopped command, or of what a
  /// stopped command left in its group.
  package var nextDeadline: ContinuousClock.Instant? {
    ([killDeadline].compactMap { $0 } + lingeringGroups.map(\.killAt)).min()
  }

  /// Starts the command (see ``Subprocess/spawn(_:environment:standardInput:standardOutput:standardError:newProcessGroup:closingInheritedDescriptors:)``).
  /// - Throws: `SystemError` with operation `run` (`ENOENT`: not found; `EACCES`: not
  ///   executable).
  package func start(environment: [String: String?] = [:], standardInput: FileDescriptor? = nil) throws(SystemError) {
    child = try Subprocess.spawn(command, environment: environment, standardInput: standardInput, newProcessGroup: ownProcessGroup)
    stopRequested = false
    killDeadline = nil
  }

  /// Passes `signal` on to the command's process (not its group); nothing when none runs.
  package func forward(_ signal: Signal) {
    try? child?.send(signal)
  }

  /// Sends the command its reload signal (`--signal HUP`): to its process alone. A command
  /// that has just exited (not reaped yet) takes it and ignores it.
  package func reload(with signal: Signal) {
    forward(signal)
  }

  /// Tells the command to stop: SIGTERM (to its group when it has one), and SIGKILL once
  /// ``killDelay`` has passed (at the ``tick(now:)`` after ``nextDeadline``). Once only.
  package func stop() {
    guard let child, !stopRequested else { return }
    stopRequested = true
    if ownProcessGroup { try? child.sendToProcessGroup(.terminate) } else { try? child.send(.terminate) }
    killDeadline = ContinuousClock.now + killDelay
  }

  /// Collects the command if it has exited: its status as a shell reports it (128+N when
  /// killed by signal N), or `nil` while it runs.
  package func reap() -> Int32? {
    guard let current = child else { return nil }
    let status: Int32
    do {
      guard let exit = try current.exitStatusIfExited() else { return nil }
      status = exit.shellStatus
    } catch {
      status = ChildSupervisor.unknownStatus
    }
    child = nil
    if ownProcessGroup, stopRequested, let killDeadline, Subprocess.processGroupIsAlive(current.id) {
      // What it started may still run, ignoring the SIGTERM: it gets SIGKILL when the
      // leader would have.
      lingeringGroups.append((current.id, killDeadline))
    }
    killDeadline = nil
    return status
  }

  /// Sends SIGKILL to a stopped command whose grace period has passed, and to what stopped
  /// commands left in their groups.
  package func tick(now: ContinuousClock.Instant) {
    if let deadline = killDeadline, now >= deadline, let child {
      if ownProcessGroup { try? child.sendToProcessGroup(.kill) } else { try? child.send(.kill) }
      killDeadline = nil
    }
    lingeringGroups.removeAll { lingering in
      guard now >= lingering.killAt else { return false }
      Subprocess.signalProcessGroup(lingering.group, .kill)
      return true
    }
  }

  /// Stops the command, if one runs, and waits for it and (in its own group) what it
  /// started: SIGKILL after ``killDelay``. What earlier stopped commands left running gets
  /// SIGKILL at once.
  package func shutDown() {
    for lingering in lingeringGroups { Subprocess.signalProcessGroup(lingering.group, .kill) }
    lingeringGroups = []
    guard let current = child else { return }
    if ownProcessGroup { try? current.sendToProcessGroup(.terminate) } else { try? current.send(.terminate) }
    let deadline = ContinuousClock.now + killDelay
    var exited = false
    while true {
      if !exited { exited = (try? current.exitStatusIfExited()) != nil }
      let groupLeft = ownProcessGroup && Subprocess.processGroupIsAlive(current.id)
      if exited && !groupLeft { break }
      if ContinuousClock.now >= deadline {
        if ownProcessGroup { Subprocess.signalProcessGroup(current.id, .kill) } else { try? current.send(.kill) }
        if !exited { _ = try? current.waitForExit() }
        break
      }
      ContinuousClock.sleepThread(for: .milliseconds(10))
    }
    child = nil
    killDeadline = nil
  }

  /// Runs the started command to its end: passes every signal that arrives on `signals` on
  /// to it (but SIGCHLD), stops it when `stopReason` first gives a reason (checked whenever
  /// the loop wakes, `wake` included), and returns its status.
  /// - Parameters:
  ///   - signals: the process's signal pipe, catching SIGCHLD among others.
  ///   - wake: what else wakes the loop (a lost lease), if anything.
  ///   - stopReason: why the command must stop now, once it must; `onStop` is then called
  ///     with the reason before the SIGTERM.
  package func runToEnd(
    signals: SignalPipe, wake: WakeUpChannel? = nil, stopReason: () -> String? = { nil },
    onStop: (String) -> Void = { _ in }
  ) -> Int32 {
    let sources: [any InputSource] = [signals] + (wake.map { [$0] } ?? [])
    while true {
      if let status = reap() { return status }
      // SIGCHLD wakes the wait; the timeout is a safety net should one be missed.
      let timeout = nextDeadline.map { max($0 - ContinuousClock.now, .zero) } ?? .seconds(1)
      _ = try? waitForInput(from: sources, timeout: min(timeout, .seconds(1)))
      wake?.drain()
      for signal in signals.drain() where signal != .childStatusChanged { forward(signal) }
      if !stopRequested, let reason = stopReason() {
        onStop(reason)
        stop()
      }
      tick(now: .now)
    }
  }
}
