import Glibc

/// Waits until one of `descriptors` is readable or `timeout` passes.
///
/// - Parameters:
///   - descriptors: the descriptors to wait on; negative entries are ignored.
///   - timeout: how long to wait at most; `nil` waits until a descriptor is readable.
/// - Returns: for each descriptor, whether it is readable (or in error or hung up, which a
///   read reports). All `false` after the timeout, or when a signal interrupted the wait: the
///   caller's loop recomputes its deadline and waits again.
/// - Throws: `SystemError` for a failure other than `EINTR`.
/// The corresponding C function is `poll`.
func waitUntilReadable(_ descriptors: [Int32], timeout: Duration?) throws(SystemError) -> [Bool] {
  var entries = descriptors.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
  let milliseconds: Int32
  if let timeout {
    if timeout <= .zero {
      milliseconds = 0
    } else {
      // Round up, so a deadline 0.3 ms away does not become a busy loop of zero timeouts.
      let (seconds, attoseconds) = timeout.components
      let rest = (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
      milliseconds = Int32(clamping: seconds.multipliedReportingOverflow(by: 1000).partialValue + rest)
    }
  } else {
    milliseconds = -1
  }
  let count = entries.withUnsafeMutableBufferPointer {
    poll($0.baseAddress, nfds_t($0.count), milliseconds)
  }
  if count == -1 {
    let code = errno
    if code == EINTR { return descriptors.map { _ in false } }
    throw SystemError(code: code, operation: "poll")
  }
  let ready = Int16(POLLIN | POLLERR | POLLHUP | POLLNVAL)
  return entries.map { $0.revents & ready != 0 }
}

/// A pipe another thread writes to so a thread waiting in `poll` wakes up at once.
///
/// Both ends are non-blocking and close-on-exec. Repeated `signal()` calls before a `drain()`
/// coalesce: a full pipe already means "wake up". Safe to use from any thread: it only
/// reads and writes descriptors that stay open until `deinit`.
final class WakeUpPipe: Sendable {
  /// The end to `poll` for readability.
  let readDescriptor: Int32
  private let writeDescriptor: Int32

  /// Opens the pipe.
  /// - Throws: `SystemError` when no descriptor is left (`EMFILE`, `ENFILE`).
  /// The corresponding C functions are `pipe` and `fcntl`.
  init() throws(SystemError) {
    var ends: [Int32] = [-1, -1]
    _ = try systemCall("pipe") { pipe(&ends) }
    for end in ends {
      _ = fcntl(end, F_SETFD, FD_CLOEXEC)
      _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
    }
    readDescriptor = ends[0]
    writeDescriptor = ends[1]
  }

  deinit {
    close(readDescriptor)
    close(writeDescriptor)
  }

  /// Makes the read end readable. Never blocks.
  func signal() {
    var byte: UInt8 = 1
    while write(writeDescriptor, &byte, 1) == -1 && errno == EINTR {}
  }

  /// Empties the pipe, so the next `poll` waits again.
  func drain() {
    var buffer = [UInt8](repeating: 0, count: 64)
    while true {
      let count = read(readDescriptor, &buffer, buffer.count)
      if count > 0 { continue }
      if count == -1 && errno == EINTR { continue }
      return
    }
  }
}
