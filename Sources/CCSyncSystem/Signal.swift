import Glibc

/// A POSIX signal number with a name, and the process-wide settings for it, so that code
/// above System need not import Glibc. `Sendable`.
package struct Signal: RawRepresentable, Hashable, Sendable {
  /// The signal number.
  package var rawValue: Int32

  /// Wraps a signal number.
  package init(rawValue: Int32) {
    self.rawValue = rawValue
  }

  /// `SIGINT`: Ctrl-C at a terminal.
  package static let interrupt = Signal(rawValue: SIGINT)
  /// `SIGTERM`: a polite request to stop.
  package static let terminate = Signal(rawValue: SIGTERM)
  /// `SIGHUP`: the terminal went away.
  package static let hangUp = Signal(rawValue: SIGHUP)
  /// `SIGQUIT`: Ctrl-\ at a terminal.
  package static let quit = Signal(rawValue: SIGQUIT)
  /// `SIGKILL`: stop now; cannot be caught or ignored.
  package static let kill = Signal(rawValue: SIGKILL)
  /// `SIGPIPE`: a write to a pipe nobody reads.
  package static let brokenPipe = Signal(rawValue: SIGPIPE)
  /// `SIGCHLD`: a child process exited (or stopped).
  package static let childStatusChanged = Signal(rawValue: SIGCHLD)

  /// The terminating signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT) and SIGPIPE that this
  /// process was started with ignored (`nohup` ignores SIGHUP; a shell's background jobs
  /// SIGINT and SIGQUIT), read the first time this is asked, which must be before this
  /// process changes them (``SignalPipe/install(_:)`` and ``ignore()`` ask first). They stay
  /// ignored here and in children, as flock(1) and every tool that `exec`s leave them.
  /// SIGCHLD is not among them: an ignored SIGCHLD would keep a process from waiting for its
  /// children, so `ccsync` gives it its default action at start (``restoreDefaultAction()``).
  package static let ignoredAtStart: Set<Signal> = {
    var ignored: Set<Signal> = []
    for signal in [Signal.interrupt, .terminate, .hangUp, .quit, .brokenPipe] {
      var current = sigaction()
      sigaction(signal.rawValue, nil, &current)
      if unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self) == 1 { ignored.insert(signal) }  // SIG_IGN
    }
    return ignored
  }()

  /// Ignores this signal in the whole process from now on. Children started with
  /// ``Subprocess/spawn(_:environment:standardInput:standardOutput:standardError:newProcessGroup:)``
  /// still get it at its default action, unless it was ignored at start (``ignoredAtStart``).
  /// - Throws: `SystemError` (`EINVAL` for `SIGKILL` and `SIGSTOP`).
  /// The corresponding C function is `sigaction` with `SIG_IGN`.
  package func ignore() throws(SystemError) {
    _ = Signal.ignoredAtStart
    try setDisposition(SIG_IGN, operation: "ignore signal \(rawValue)")
  }

  /// Gives this signal back the action this process started with: ignored when it was
  /// ignored at start (``ignoredAtStart``, a shell's background job), otherwise the default
  /// (for most: end the process). Handlers do not survive `exec`, so there is no third case.
  /// - Throws: `SystemError` (`EINVAL` for an invalid number).
  /// The corresponding C function is `sigaction` with `SIG_IGN` or `SIG_DFL`.
  package func restoreActionAtStart() throws(SystemError) {
    if Signal.ignoredAtStart.contains(self) {
      try setDisposition(SIG_IGN, operation: "ignore signal \(rawValue)")
    } else {
      try restoreDefaultAction()
    }
  }

  /// Gives this signal its default action, whatever this process was started with. For
  /// SIGCHLD, which a process that waits for its children needs at its default: started
  /// with it ignored (`env --ignore-signal=CHLD`), the kernel reaps the children itself and
  /// every `waitpid` for them fails with `ECHILD`.
  /// - Throws: `SystemError` (`EINVAL` for `SIGKILL` and `SIGSTOP`).
  /// The corresponding C function is `sigaction` with `SIG_DFL`.
  package func restoreDefaultAction() throws(SystemError) {
    try setDisposition(SIG_DFL, operation: "restore default action of signal \(rawValue)")
  }

  /// Ends this process by this signal, at its default action, so that its parent sees it
  /// killed by the signal (status 128+N in a shell) as if it had never been caught: for a
  /// command that catches a signal only to clean up first. A signal whose default action
  /// does not end a process ends it with status 128+N.
  /// The corresponding C functions are `sigaction` with `SIG_DFL`, `pthread_sigmask` and `raise`.
  package func endProcess() -> Never {
    try? restoreDefaultAction()
    try? Signal.unblock([self])
    raise(rawValue)
    Glibc.exit(128 + rawValue)
  }

  /// Lets the calling thread receive `signals`: a parent may have started this process with
  /// them blocked (test runners and some supervisors do), and a signal blocked in every
  /// thread stays pending forever.
  /// - Throws: `SystemError` (`EINVAL`).
  /// The corresponding C function is `pthread_sigmask` with `SIG_UNBLOCK`.
  package static func unblock(_ signals: [Signal]) throws(SystemError) {
    var set = sigset_t()
    sigemptyset(&set)
    for signal in signals { sigaddset(&set, signal.rawValue) }
    let result = pthread_sigmask(SIG_UNBLOCK, &set, nil)
    if result != 0 { throw SystemError(code: result, operation: "unblock signals") }
  }

  private func setDisposition(_ handler: __sighandler_t?, operation: String) throws(SystemError) {
    var action = sigaction()
    action.__sigaction_handler.sa_handler = handler
    sigemptyset(&action.sa_mask)
    action.sa_flags = SA_RESTART
    _ = try systemCall(operation) { sigaction(rawValue, &action, nil) }
  }
}
