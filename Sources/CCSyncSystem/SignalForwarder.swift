import CCSyncSystemShims
import Glibc
import Synchronization

/// Write end of the self-pipe the signal handler writes to; set once before any handler is
/// installed and never changed (a signal handler can read nothing safer than a global).
nonisolated(unsafe) private var signalPipeWriteEnd: Int32 = -1

/// When the work for a signal started (``MachineStamp/now()``, a plain `clock_gettime`: the
/// signal handler compares it, and may call only async-signal-safe functions, which the Swift
/// runtime's `ContinuousClock.now` is not documented to be), 0 while none runs (a lock-free
/// atomic: the signal handler reads it).
private let signalWorkStarted = Atomic<Int64>(0)


/// How long after the first terminating signal a second one is taken for the same event
/// delivered twice, and ignored: closing a terminal sends SIGHUP twice (the kernel, then the
/// shell) within a millisecond, and systemd sends SIGTERM and SIGHUP together.
private let repeatedSignalWindow: Int64 = 1_000_000_000

/// Runs work when a terminating signal arrives, then lets the signal do what it would have
/// done: the handler only writes the signal number to a pipe (async-signal-safe); a thread
/// reading the pipe runs the callback, restores the default disposition and raises the signal
/// again, so the process still dies of it (exit status 128+N).
///
/// A second terminating signal while the work runs, a second or more after the first, takes
/// effect at once, without waiting for it: the way out of a flush that waits for a lock
/// another process holds (a user pressing Ctrl-C twice). What that work had still to write
/// is then lost. One that comes sooner is the same event delivered twice, and is ignored.
///
/// Where the signal does not end the process even at its default action (the init process
/// of a PID namespace, as in a container), the process exits with status 128+N instead.
///
/// Only signals whose disposition is still the default are taken over: an application's own
/// handlers, and signals it ignores (`nohup`), are left alone.
package enum SignalForwarder {
  private static let installed = Protected<Set<Int32>>([])
  private static let callback = Protected<(@Sendable (Int32) -> Void)?>(nil)

  /// SIGTERM, SIGINT and SIGHUP.
  package static let terminationSignals: [Int32] = [SIGTERM, SIGINT, SIGHUP]

  /// Arranges for `work` to run before each of `signals` takes effect. Idempotent; the last
  /// `work` given is the one that runs.
  package static func install(signals: [Int32], work: @escaping @Sendable (Int32) -> Void) throws(SystemError) {
    callback.withLock { $0 = work }
    // Initialised now: a global's first use goes through `swift_once`, which a signal
    // handler must not be the one to run.
    _ = signalWorkStarted.load(ordering: .relaxed)
    try installed.withLock { (installed: inout Set<Int32>) throws(SystemError) in
      if signalPipeWriteEnd == -1 { try startPipeReader() }
      for signal in signals where !installed.contains(signal) {
        var current = sigaction()
        sigaction(signal, nil, &current)
        guard current.__sigaction_handler.sa_handler == nil else { continue }  // not SIG_DFL
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { number in
          let saved = errno  // the interrupted code may be about to read it
          defer { errno = saved }
          let started = signalWorkStarted.load(ordering: .acquiring)
          if started != 0 {
            // Already working for a signal. Soon after it: the same event again, ignored.
            // Later: this one ends the process now (clock_gettime, sigaction, raise and _exit
            // are async-signal-safe; the signal is blocked until this handler returns, and
            // takes effect when it does).
            if MachineStamp.now() - started < repeatedSignalWindow { return }
            var defaultAction = sigaction()
            sigemptyset(&defaultAction.sa_mask)
            sigaction(number, &defaultAction, nil)
            raise(number)
            // Unblocked here, the signal takes effect at once. Still running: the default
            // action does not end this process (the init of a PID namespace drops it).
            var own = sigset_t()
            sigemptyset(&own)
            sigaddset(&own, number)
            pthread_sigmask(SIG_UNBLOCK, &own, nil)
            _exit(128 + number)
          }
          var byte = UInt8(truncatingIfNeeded: number)
          _ = Glibc.write(signalPipeWriteEnd, &byte, 1)
        }
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART
        sigaction(signal, &action, nil)
        installed.insert(signal)
      }
    }
  }

  private static func startPipeReader() throws(SystemError) {
    var ends: [Int32] = [0, 0]
    _ = try systemCall("create pipe") { pipe2(&ends, O_CLOEXEC) }
    signalPipeWriteEnd = ends[1]
    let readEnd = ends[0]
    let thread = try BackgroundThread(name: "ccsync-signals") {
      // A process may start with these signals blocked (Foundation's `Process` spawns
      // children that way); a signal blocked in every thread would stay pending forever.
      // Unblocked here, the kernel delivers it to this thread, which runs the handler.
      try? Signal.unblock(SignalForwarder.terminationSignals.map(Signal.init(rawValue:)))
      while true {
        var byte: UInt8 = 0
        let got = Glibc.read(readEnd, &byte, 1)
        if got == 1 {
          let number = Int32(byte)
          signalWorkStarted.store(max(1, MachineStamp.now()), ordering: .releasing)
          callback.withLock { $0 }?(number)
          // The signal at its default action, or 128+N where even that does not end the
          // process (the init process of a PID namespace ignores it).
          Signal(rawValue: number).endProcess()
        } else if got == 0 || errno != EINTR {
          return
        }
      }
    }
    thread.detach()
  }
}
