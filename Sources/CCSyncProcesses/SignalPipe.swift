import CCSyncSystem
import CCSyncSystemShims
import Glibc

/// Write end of the pipe the ``SignalPipe`` handlers write to; set once, before any handler is
/// installed, and never closed (a signal handler can read nothing safer than a global).
nonisolated(unsafe) private var signalPipeHandlerWriteEnd: Int32 = -1

/// Signals turned into bytes on a pipe, so that a loop waiting in
/// ``waitForInput(from:timeout:)`` wakes up for them together with its other input, and
/// handles them in its own time instead of in a signal handler.
///
/// The handlers only `write` the signal number (async-signal-safe) and keep `errno`. There is
/// one pipe per process: ``install(_:)`` returns the same instance every time, and its
/// descriptors stay open for the life of the process, since a handler may write at any
/// moment. `Sendable`: its descriptors never change and are never closed.
package final class SignalPipe: InputSource, Sendable {
  private static let shared = Protected<SignalPipe?>(nil)
  private let readEnd: Int32

  private init(readEnd: Int32) {
    self.readEnd = readEnd
  }

  /// Catches `signals` from now on, replacing their previous handlers, and unblocks them in
  /// the calling thread; except those this process was started with ignored
  /// (``Signal/ignoredAtStart``: `nohup`'s SIGHUP), which stay ignored, as flock(1) leaves
  /// them. `SIGCHLD` is reported when a child exits, not when it stops.
  /// System calls interrupted by these signals restart (`SA_RESTART`).
  /// - Returns: the process's signal pipe, to wait on and ``drain()``.
  /// - Throws: `SystemError` when the pipe cannot be created (`EMFILE`) or a handler
  ///   cannot be installed (`EINVAL` for `SIGKILL`).
  /// The corresponding C functions are `pipe2`, `sigaction` and `pthread_sigmask`.
  package static func install(_ signals: [Signal]) throws(SystemError) -> SignalPipe {
    let pipe = try shared.withLock { (shared: inout SignalPipe?) throws(SystemError) -> SignalPipe in
      if let shared { return shared }
      var ends: [Int32] = [-1, -1]
      _ = try systemCall("create pipe") { pipe2(&ends, O_CLOEXEC | O_NONBLOCK) }
      signalPipeHandlerWriteEnd = ends[1]
      let created = SignalPipe(readEnd: ends[0])
      shared = created
      return created
    }
    let ignored = Signal.ignoredAtStart
    for signal in signals where !ignored.contains(signal) {
      var action = sigaction()
      action.__sigaction_handler.sa_handler = { number in
        let saved = errno
        var byte = UInt8(truncatingIfNeeded: number)
        _ = Glibc.write(signalPipeHandlerWriteEnd, &byte, 1)
        errno = saved
      }
      sigemptyset(&action.sa_mask)
      action.sa_flags = SA_RESTART | (signal == .childStatusChanged ? SA_NOCLDSTOP : 0)
      _ = try systemCall("catch signal \(signal.rawValue)") { sigaction(signal.rawValue, &action, nil) }
    }
    try Signal.unblock(signals)
    return pipe
  }

  /// The signals that arrived since the last call, in the order they arrived (a signal that
  /// arrived twice before the first was handled may be reported once). Never blocks.
  /// The corresponding C function is `read`.
  package func drain() -> [Signal] {
    var result: [Signal] = []
    var buffer = [UInt8](repeating: 0, count: 64)
    while true {
      let count = buffer.withUnsafeMutableBytes { Glibc.read(readEnd, $0.baseAddress, $0.count) }
      if count > 0 {
        result += buffer[..<count].map { Signal(rawValue: Int32($0)) }
      } else if count == -1 && errno == EINTR {
        continue
      } else {
        return result
      }
    }
  }

  /// The descriptor to wait on.
  package var descriptorToPoll: Int32 { readEnd }
}
