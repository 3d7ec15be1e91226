import CCSyncSystemShims
import Glibc
import Synchronization

/// Write end of the self-pipe the signal handler writes to; set once before any handler is
/// installed and never changed (a signal handler can read nothing safer than a global).
nonisolated(unsafe) private var signalPipeWriteEnd: Int32 = -1

/// 1 while the work for a signal runs (a lock-free atomic: the signal handler reads it).
private let signalWorkRunning = Atomic<Int32>(0)

/// Runs work when a terminating signal arrives, then lets the signal do what it would have
/// done: the handler only writes the signal number to a pipe (async-signal-safe); a thread
/// reading the pipe runs the callback, restores the default disposition and raises the signal
/// again, so the process still dies of it (exit status 128+N).
///
/// A second terminating signal while the work runs takes effect at once, without waiting for
/// it: the way out of a flush that waits for a lock another process holds (a user pressing
/// Ctrl-C twice). What that work had still to write is then lost.
///
/// Only signals whose disposition is still the default are taken over: an application's own
/// handlers, and signals it ignores (`nohup`), are left alone.
enum SignalForwarder {
  private static let installed = Protected<Set<Int32>>([])
  private static let callback = Protected<(@Sendable (Int32) -> Void)?>(nil)

  /// SIGTERM, SIGINT and SIGHUP.
  static let terminationSignals: [Int32] = [SIGTERM, SIGINT, SIGHUP]

  /// Arranges for `work` to run before each of `signals` takes effect. Idempotent; the last
  /// `work` given is the one that runs.
  static func install(signals: [Int32], work: @escaping @Sendable (Int32) -> Void) throws(SystemError) {
    callback.withLock { $0 = work }
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
          if signalWorkRunning.load(ordering: .acquiring) != 0 {
            // Already working for a signal: this one ends the process now (sigaction and
            // raise are async-signal-safe; the signal is blocked until this handler returns).
            var defaultAction = sigaction()
            sigemptyset(&defaultAction.sa_mask)
            sigaction(number, &defaultAction, nil)
            raise(number)
            return
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
          signalWorkRunning.store(1, ordering: .releasing)
          callback.withLock { $0 }?(number)
          signal(number, SIG_DFL)
          raise(number)
        } else if got == 0 || errno != EINTR {
          return
        }
      }
    }
    thread.detach()
  }
}
